// Every request the console makes: GraphQL over HTTP and graphql-ws (the graphql-ws package's client) on /graphql, each
// with the admin key signed in for this tab. The key lives in sessionStorage only: never in a URL, gone with the tab.
import { createClient } from 'graphql-ws';

const SLOT = 'lastunit.console.adminKey';

export const session = {
  key: () => sessionStorage.getItem(SLOT),
  signIn: (key) => sessionStorage.setItem(SLOT, key),
  signOut: () => sessionStorage.removeItem(SLOT),
};

/** One GraphQL request; answers { data, errors } as the API sent them (a 401/403 too), throws only on no answer. */
export async function gql(query, variables, key = session.key()) {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await res.json().catch(() => ({ errors: [{ message: `HTTP ${res.status}` }] }));
  return { data: body.data ?? null, errors: body.errors ?? null, status: res.status };
}

/** The first error's message of an answer, or null. */
export const errorOf = (r) => (r.errors?.length ? r.errors[0].message : null);

/** A mutation's userErrors as one sentence each: "CODE: message". */
export const userErrorText = (errors) => errors.map((e) => `${e.code}: ${e.message}`).join(' ');

/** graphql-ws to this origin, retrying for ever; onStatus(connected) hears each change. */
export function liveClient(key, onStatus) {
  return createClient({
    url: `${location.origin.replace(/^http/, 'ws')}/graphql`,
    connectionParams: { authorization: `Bearer ${key}` },
    retryAttempts: Number.POSITIVE_INFINITY,
    shouldRetry: () => true,
    lazy: false,
    on: { connected: () => onStatus(true), closed: () => onStatus(false) },
  });
}

/** Whether this server's API has the root field `Query.<field>` (a probe: an unknown field fails validation). */
export async function hasQueryField(field) {
  const r = await gql(`{ ${field} { __typename } }`);
  return !(r.errors || []).some((e) => /Cannot query field/.test(e.message));
}
