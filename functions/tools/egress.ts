/**
 * Where an http tool may connect. Only public unicast addresses are called unless the tool opts in
 * with `allowPrivateNetwork`: loopback, link-local (the cloud metadata address 169.254.169.254
 * included), private, unique-local, carrier-grade NAT, unspecified, multicast, reserved and
 * documentation ranges are refused, in IPv4 and IPv6, IPv4-mapped and NAT64/6to4 forms included.
 *
 * The check is made on the address the connection uses: a host name is resolved once, by the
 * `lookup` hook of the socket itself, and the socket connects to the address that was checked, so
 * a DNS answer that changes between a check and the connection (DNS rebinding) cannot slip through.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ToolFailure } from './failure.ts';

/** dns.lookup with `all: true`: every address of a host name (injectable for tests). */
export type ResolveAll = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolveAll: ResolveAll = (hostname) =>
  new Promise((resolve, reject) => {
    const options: LookupAllOptions = { all: true, verbatim: true };
    dnsLookup(hostname, options, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

/** True for a public unicast address (the only kind called without `allowPrivateNetwork`). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // process() turns an IPv4-mapped IPv6 address (::ffff:127.0.0.1) into the IPv4 address it maps.
  return ipaddr.process(address).range() === 'unicast';
}

export interface EgressPolicy {
  toolName: string;
  allowPrivateNetwork: boolean;
  resolveAll: ResolveAll;
}

function denied(policy: EgressPolicy, host: string, address: string): ToolFailure {
  const via = host === address ? '' : ` (${host} resolves to ${address})`;
  return new ToolFailure(
    'TOOL_EGRESS_DENIED',
    `tool "${policy.toolName}": ${address} is not a public address${via}; set "allowPrivateNetwork": true on the tool's handler to call loopback, link-local or private addresses`,
  );
}

/** Refuses an IP-literal host before connecting (sockets resolve only names through `lookup`). */
export function checkLiteralHost(policy: EgressPolicy, hostname: string): void {
  const address = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (isIP(address) === 0 || policy.allowPrivateNetwork) return;
  if (!isPublicAddress(address)) throw denied(policy, address, address);
}

/**
 * The socket's `lookup` hook: resolves the host once and answers with addresses that passed the
 * policy. A name with any refused address is refused whole (no falling back to its public ones).
 */
export function guardedLookup(policy: EgressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    policy.resolveAll(hostname).then(
      (all) => {
        const wanted = options.family === 4 || options.family === 6 ? options.family : undefined;
        const addresses = all.filter((entry) => wanted === undefined || entry.family === wanted);
        if (!policy.allowPrivateNetwork) {
          const refused = addresses.find((entry) => !isPublicAddress(entry.address));
          if (refused) return callback(denied(policy, hostname, refused.address), '', 0);
        }
        const [first] = addresses;
        if (first === undefined) {
          const error = Object.assign(new Error(`no address found for ${hostname}`), { code: 'ENOTFOUND' });
          return callback(error, '', 0);
        }
        if (options.all)
          return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
