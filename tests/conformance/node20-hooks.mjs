// ESM resolve hook (see node20-register.mjs). Only modules inside the conformance package are
// redirected, so every other importer of `fs` keeps the real module.
const SHIM_URL = new URL('./fs-with-globsync.mjs', import.meta.url).href;
const PACKAGE_MARKER = '/@modelcontextprotocol/conformance/';

export async function resolve(specifier, context, nextResolve) {
  const fromSuite =
    typeof context.parentURL === 'string' && context.parentURL.includes(PACKAGE_MARKER);
  if (fromSuite && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: SHIM_URL, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
