/**
 * The parts of undici the fetcher uses, each from its own module rather than
 * undici's index: the index loads all of undici (fetch, WebSocket, mocks,
 * caches, proxies: 1 MB bundled) and every worker process paid for it at
 * start-up. undici 7 has no "exports" map, so these paths are its files.
 */
import type { Agent as UndiciAgent, buildConnector as UndiciBuildConnector, Dispatcher } from 'undici';
import AgentClass from 'undici/lib/dispatcher/agent.js';
import connect from 'undici/lib/core/connect.js';
import apiRequest from 'undici/lib/api/api-request.js';

export const Agent: typeof UndiciAgent = AgentClass;
export type Agent = UndiciAgent;
/** undici's buildConnector. */
export const connectorOf: typeof UndiciBuildConnector = connect;

/** undici's `request(url, { dispatcher, ... })`, as its index builds it: origin and path from the URL. */
export function request(url: string, options: Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & { dispatcher: Dispatcher }): Promise<Dispatcher.ResponseData> {
  const { dispatcher, ...rest } = options;
  const u = new URL(url);
  return apiRequest.call(dispatcher, { ...rest, origin: u.origin, path: `${u.pathname}${u.search}` });
}
