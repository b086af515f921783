// `node:fs` plus a `globSync` export for Node versions that lack it (< 22).
import fs from 'node:fs';

export * from 'node:fs';
export default fs;

function missingGlobSync() {
  throw new Error(`fs.globSync needs Node >= 22 (running ${process.version}); only 'tier-check' uses it`);
}

export const globSync = typeof fs.globSync === 'function' ? fs.globSync : missingGlobSync;
