import { createRequire } from 'node:module';

const pkg = createRequire(import.meta.url)('../package.json') as { version: string };
/** Semver with a leading v, as kube's version.Info.gitVersion. */
export const VERSION = `v${pkg.version}`;
