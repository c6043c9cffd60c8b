// Module resolution hooks (registered by resolve-log.mjs): every module a
// process resolves, printed to stderr as "RESOLVED <url>".
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  process._rawDebug(`RESOLVED ${resolved.url}`);
  return resolved;
}
