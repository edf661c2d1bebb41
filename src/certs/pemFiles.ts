// What every generated PEM set shares: the validity window, a self-signed CA, and files that appear
// complete or not at all (two processes starting on one cert dir never see half a key).
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { access, link, open, unlink } from 'node:fs/promises';
import type { generate as Generate } from 'selfsigned';

export interface PemPair { cert: string; key: string }

export const DAY_MS = 24 * 60 * 60 * 1000;
/** Backdate notBefore so that small clock differences between machines do not reject a fresh cert. */
export const BACKDATE_MS = 60 * 60 * 1000;

/**
 * selfsigned's generate, loaded on first use: its x509/ASN.1 stack is ~25 ms of a start, and a server
 * whose certificates already exist never generates one (the bundle keeps it in a chunk of its own).
 */
export async function certGenerator(): Promise<typeof Generate> {
  // A CommonJS module: Node's loader names its exports, a bundle's dynamic import only has `default`.
  const m: { generate?: typeof Generate; default?: { generate: typeof Generate } } = await import('selfsigned');
  const generate = m.generate ?? m.default?.generate;
  if (!generate) throw new Error('selfsigned has no generate()');
  return generate;
}

export async function exists(path: string): Promise<boolean> {
  return access(path, fsConstants.F_OK).then(() => true, () => false);
}

/** Write `data` to `path` only if `path` does not exist; the file appears complete or not at all. */
export async function writeNew(path: string, data: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  // A failure names the file being made, not its temporary name (e.g. EACCES in a read-only dir).
  const named = (e: unknown) => { throw Object.assign(e as NodeJS.ErrnoException, { path }); };
  const fh = await open(tmp, 'wx', mode).catch(named);
  try {
    await fh.writeFile(data);
    await fh.chmod(mode); // umask could only narrow it, but be explicit
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(tmp, path).catch(named);
  } finally {
    await unlink(tmp).catch(() => {});
  }
}

/** A P-256 CA valid for ten years. */
export async function generateCa(commonName: string): Promise<PemPair> {
  const now = Date.now();
  const generate = await certGenerator();
  const ca = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec', curve: 'P-256', algorithm: 'sha256',
    notBeforeDate: new Date(now - BACKDATE_MS),
    notAfterDate: new Date(now + 3650 * DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: ca.cert, key: ca.private };
}
