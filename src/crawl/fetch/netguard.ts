import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { WeirError } from '../../errors.js';

/**
 * Addresses a crawler must not reach unless told to: loopback, private,
 * carrier-grade NAT, link-local (which holds the cloud metadata services at
 * 169.254.169.254 and fd00:ec2::254), multicast, reserved and unspecified.
 */
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32],
] as const) blocked.addSubnet(net, prefix, 'ipv6');

/** True when `address` (an IP literal) is one weir refuses by default. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return blocked.check(mapped[1], 'ipv4');
    return blocked.check(address, 'ipv6');
  }
  return false;
}

export class PrivateAddressError extends WeirError {
  constructor(host: string, address: string) {
    super('WEIR_PRIVATE_ADDRESS', `refused to connect to ${host} (${address}): a private, loopback or link-local address (allowPrivateNetworks is off)`);
    this.name = 'PrivateAddressError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type LookupFunction = (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback) => void;

/**
 * A `lookup` for net.connect that resolves the name and refuses private
 * addresses: the check is on the address the socket will connect to, so a
 * name that resolves differently between a check and the connection cannot
 * slip through. `resolve` is injectable so tests can control DNS answers.
 */
export function guardedLookup(
  allowPrivate: boolean,
  resolve: (hostname: string, options: LookupAllOptions, cb: (err: NodeJS.ErrnoException | null, addrs: LookupAddress[]) => void) => void = dnsLookup,
): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : typeof options.family === 'number' ? options.family : 0;
    resolve(hostname, { all: true, family }, (err, addrs) => {
      if (err) return callback(err, '');
      const usable = allowPrivate ? addrs : addrs.filter((a) => !isPrivateAddress(a.address));
      if (usable.length === 0) {
        const first = addrs[0]?.address ?? 'no address';
        return callback(new PrivateAddressError(hostname, first), '');
      }
      if (options.all) return callback(null, usable);
      const a = usable[0] as LookupAddress;
      callback(null, a.address, a.family);
    });
  };
}
