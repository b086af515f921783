// Preloaded with `node --import ./node20-register.mjs`: lets the conformance CLI start on Node 20.
// The CLI bundle statically imports `globSync` from `fs`, which Node only has from 22 on (and only
// its `tier-check` command calls it). The resolve hook below swaps that one import for a shim.
import { register } from 'node:module';

register('./node20-hooks.mjs', import.meta.url);
