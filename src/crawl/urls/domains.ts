import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';
import { getDomain } from 'tldts';

/**
 * A configured domain key: the politeness unit. A URL whose host equals the
 * key's host or is a subdomain of it (and whose port matches, when the key
 * names one) belongs to this key's queue, so www.example.org and
 * en.example.org share example.org's rate across all workers.
 */
export interface DomainKey {
  /** The key as stored and used as the queue name: lowercase, punycode, IPv6 in brackets. */
  key: string;
  /** Host part, lowercase punycode; IPv6 without brackets. */
  host: string;
  /** Port, or null for any port. */
  port: number | null;
}

/** A last label the URL standard reads as a number, so a host it ends is an IPv4 address to domainToASCII ("1.2.3" is 1.2.0.3). */
const NUMBER_LABEL = /^(\d+|0x[0-9a-f]*)$/;

/** nameFlaws: a character outside [a-z0-9-], or an empty label (the name '' too). */
const NOT_ASCII_NAME = 1;
/** nameFlaws: a label that starts or ends with a hyphen, or is longer than 63 bytes. */
const BAD_LABEL = 2;

/**
 * What keeps a name from being a host name of lowercase ASCII labels
 * (NOT_ASCII_NAME, BAD_LABEL; 0: nothing), in one pass over it. (Three
 * regular expressions did this, one of them trying a 64-character run at
 * every place: a quarter of parsing a 10^6-line domain file.)
 */
export function nameFlaws(name: string): number {
  let flaws = 0;
  let start = 0;
  for (let i = 0; i <= name.length; i++) {
    // (The end of the name ends its last label, as a dot would.)
    const c = i < name.length ? name.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      const length = i - start;
      if (length === 0) flaws |= NOT_ASCII_NAME;
      else if (length > 63 || name.charCodeAt(start) === 0x2d || name.charCodeAt(i - 1) === 0x2d) flaws |= BAD_LABEL;
      start = i + 1;
    } else if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d)) {
      flaws |= NOT_ASCII_NAME;
    }
  }
  return flaws;
}

/**
 * Whether domainToASCII would give a (lowercased) name back as it is:
 * lowercase ASCII labels, none punycode, not ending in a number. A domain
 * key in that form is taken as it is (parseDomainKey's first step: most of
 * a 10^6-line domain file); other names go through domainToASCII.
 */
function isOwnAsciiForm(name: string, flaws: number): boolean {
  return (flaws & NOT_ASCII_NAME) === 0 && !name.includes('xn--') && !NUMBER_LABEL.test(name.slice(name.lastIndexOf('.') + 1));
}

/** isIP, asked only of a text that could be an address (a colon, or a last digit): not of each name of a 10^6-line domain file. */
function addressKind(text: string): number {
  const last = text.charCodeAt(text.length - 1);
  return text.includes(':') || (last >= 0x30 && last <= 0x39) ? isIP(text) : 0;
}

/** Parses a seed file's domain key; returns an error message instead of throwing. */
export function parseDomainKey(raw: string): DomainKey | string {
  const text = raw.trim();
  if (text === '') return 'is empty';
  // A name of lowercase ASCII labels, in its own form: no scheme, port, brackets
  // or address to find, and no other form to take (most of a domain file's lines).
  const plain = nameFlaws(text);
  if ((plain & NOT_ASCII_NAME) === 0 && isOwnAsciiForm(text, plain)) {
    return plain === 0 ? { key: text, host: text, port: null } : `has an invalid host name ${JSON.stringify(text)}`;
  }
  if (/[/?#@\s]/.test(text) || /^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    return 'must be a host name or IP address with an optional :port, not a URL';
  }
  let hostPart = text;
  let port: number | null = null;
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) {
    hostPart = v6[1] ?? '';
    if (isIP(hostPart) !== 6) return `has an invalid IPv6 address ${JSON.stringify(hostPart)}`;
    if (v6[2] !== undefined) port = Number(v6[2]);
  } else {
    if (text.includes(':') && isIP(text) === 6) return 'is an IPv6 address: write it in brackets, like [::1] or [::1]:8080';
    const m = /^(.*?)(?::(\d*))?$/.exec(text);
    hostPart = m?.[1] ?? '';
    if (m?.[2] !== undefined) {
      if (m[2] === '') return 'has an empty port';
      port = Number(m[2]);
    }
  }
  if (port !== null && (!Number.isInteger(port) || port < 1 || port > 65535)) return 'has a port outside 1-65535';
  let host: string;
  const ip = addressKind(hostPart);
  if (ip === 6) {
    // The form URLs have ([0:0::1] is [::1]), so keys and URLs compare equal.
    host = new URL(`http://[${hostPart}]/`).hostname.replace(/^\[|\]$/g, '');
  } else if (ip === 4) {
    host = hostPart;
  } else {
    const name = hostPart.toLowerCase().replace(/\.$/, '');
    // (A name already in its ASCII form is not tested for that form again.)
    const flaws = nameFlaws(name);
    const own = isOwnAsciiForm(name, flaws);
    host = own ? name : domainToASCII(name);
    if ((own ? flaws : nameFlaws(host)) !== 0) {
      return `has an invalid host name ${JSON.stringify(hostPart)}`;
    }
  }
  const shown = ip === 6 ? `[${host}]` : host;
  return { key: port === null ? shown : `${shown}:${port}`, host, port };
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** Host (no brackets) and effective port of a parsed URL. */
export function hostAndPort(url: URL): { host: string; port: number } {
  const { hostname } = url;
  // (An IPv6 address is bracketed: hostname is then "[...]".)
  const host = hostname.charCodeAt(0) === 0x5b ? hostname.slice(1, -1) : hostname;
  const port = url.port === '' ? (DEFAULT_PORTS[url.protocol] ?? 0) : Number(url.port);
  return { host, port };
}

/**
 * Finds the domain key a URL belongs to: its host equals a key's host or is
 * a subdomain of it, and the port matches when the key names one. When
 * several keys match, the longest (most specific) wins.
 */
export class DomainMatcher {
  /** Keys by host, each with its rank: longest key first (the most specific wins). */
  private readonly byHost = new Map<string, { key: DomainKey; rank: number }[]>();

  constructor(keys: DomainKey[]) {
    [...keys]
      .sort((a, b) => b.key.length - a.key.length)
      .forEach((key, rank) => {
        const list = this.byHost.get(key.host);
        if (list) list.push({ key, rank });
        else this.byHost.set(key.host, [{ key, rank }]);
      });
  }

  /** Looks up the host and each parent domain of it (a few map lookups, whatever the number of keys). */
  match(url: URL): DomainKey | null {
    // (A seed whose domains are all in files has no inline keys: nothing to slice and look up, a URL at a time.)
    if (this.byHost.size === 0) return null;
    const { host, port } = hostAndPort(url);
    let best: { key: DomainKey; rank: number } | null = null;
    for (let at = -1, self = true; ; self = false) {
      for (const c of this.byHost.get(host.slice(at + 1)) ?? []) {
        // A parent domain matches a name key only, never an IP key.
        if ((self || isIP(c.key.host) === 0) && (c.key.port === null || c.key.port === port) && (best === null || c.rank < best.rank)) best = c;
      }
      at = host.indexOf('.', at + 1);
      if (at === -1) break;
    }
    return best?.key ?? null;
  }
}

/** What a domain found by following links is keyed on: its politeness unit (the seed's otherDomains.key). */
export type NewDomainKeying = 'host' | 'registrable';

/**
 * The queue (politeness unit) of a URL on a domain the seed does not list:
 * its host, or its registrable domain (the name under a public suffix of
 * the Public Suffix List's ICANN section, by tldts: www.example.co.uk and
 * shop.example.co.uk are example.co.uk; an IP address, or a name with no
 * registrable part such as localhost, is its own key), with the port when
 * it is not the scheme's default (another port is another server).
 */
export function newDomainKey(url: URL, keying: NewDomainKeying): string {
  const { host, port } = hostAndPort(url);
  const name = keying === 'registrable' && isIP(host) === 0 ? (getDomain(host, { allowPrivateDomains: false, extractHostname: false }) ?? host) : host;
  const shown = isIP(name) === 6 ? `[${name}]` : name;
  return port === DEFAULT_PORTS[url.protocol] ? shown : `${shown}:${port}`;
}
