import { isWeirError, WeirError } from '../../errors.js';

export type FetchErrorCode =
  | 'WEIR_PRIVATE_ADDRESS'
  | 'WEIR_TIMEOUT'
  | 'WEIR_BAD_ENCODING'
  | 'WEIR_DNS'
  | 'WEIR_CONNECT'
  | 'WEIR_RESET'
  | 'WEIR_TLS'
  | 'WEIR_PROTOCOL'
  | 'WEIR_NETWORK'
  /** Not sent at all: it would have left too late for its rate slot. */
  | 'WEIR_LATE';

/** Raw undici and Node codes, by the weir code they mean. */
const RAW: [RegExp, FetchErrorCode][] = [
  [/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL|EAI_NODATA)$/, 'WEIR_DNS'],
  [/^(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL|UND_ERR_CONNECT_TIMEOUT)$/, 'WEIR_CONNECT'],
  [/^(ECONNRESET|EPIPE|ECONNABORTED|UND_ERR_SOCKET|UND_ERR_CLOSED)$/, 'WEIR_RESET'],
  [/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERR_OSSL)/, 'WEIR_TLS'],
  [/^(HPE_|UND_ERR_INVALID_ARG|UND_ERR_RES_CONTENT_LENGTH_MISMATCH|UND_ERR_REQ_CONTENT_LENGTH_MISMATCH|UND_ERR_INFO)/, 'WEIR_PROTOCOL'],
  [/^(ETIMEDOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT|ABORT_ERR)$/, 'WEIR_TIMEOUT'],
  [/^(Z_DATA_ERROR|Z_BUF_ERROR|ERR__ERROR_FORMAT_PADDING_1)$|BROTLI/, 'WEIR_BAD_ENCODING'],
];

const FETCH_CODES = new Set<string>([...RAW.map(([, c]) => c), 'WEIR_PRIVATE_ADDRESS', 'WEIR_NETWORK', 'WEIR_LATE']);

/** A weir code for a raw undici/Node error code (a weir fetch code stays itself). */
export function fetchCodeOf(raw: string | undefined): FetchErrorCode {
  if (raw === undefined) return 'WEIR_NETWORK';
  if (FETCH_CODES.has(raw)) return raw as FetchErrorCode;
  return RAW.find(([re]) => re.test(raw))?.[1] ?? 'WEIR_NETWORK';
}

/**
 * A fetch that did not produce a response: a stable weir code, a readable
 * message, the raw error kept as `cause` (and its code as `rawCode`).
 */
export class FetchError extends WeirError {
  declare readonly code: FetchErrorCode;
  constructor(
    code: FetchErrorCode,
    message: string,
    readonly elapsedMs: number,
    options: { cause?: unknown; rawCode?: string } = {},
  ) {
    super(code, message, { cause: options.cause });
    this.name = 'FetchError';
    this.rawCode = options.rawCode ?? null;
  }

  readonly rawCode: string | null;

  /** Any thrown value as a FetchError (`timedOut` when the request's own deadline fired). */
  static from(err: unknown, elapsedMs: number, timedOut = false): FetchError {
    if (err instanceof FetchError) return err;
    if (timedOut) return new FetchError('WEIR_TIMEOUT', 'the request did not finish within its deadline', elapsedMs, { cause: err });
    const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } } | null;
    const inner = e?.cause ?? e;
    if (isWeirError(inner, 'WEIR_PRIVATE_ADDRESS')) return new FetchError('WEIR_PRIVATE_ADDRESS', inner.message, elapsedMs, { cause: err });
    if (isWeirError(e, 'WEIR_PRIVATE_ADDRESS')) return new FetchError('WEIR_PRIVATE_ADDRESS', e.message, elapsedMs, { cause: err });
    const rawCode = inner?.code ?? e?.code;
    const code = fetchCodeOf(rawCode);
    const detail = inner?.message ?? e?.message ?? String(err);
    const message = code === 'WEIR_BAD_ENCODING' ? `the body could not be decompressed (${rawCode})` : rawCode ? `${detail} (${rawCode})` : detail;
    return new FetchError(code, message, elapsedMs, { cause: err, ...(rawCode ? { rawCode } : {}) });
  }
}
