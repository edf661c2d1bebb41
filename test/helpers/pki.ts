// Throw-away CAs and client certificates (EC P-256), like test/cluster/controlPlane.ts makes.
import { readFileSync } from 'node:fs';
import { generate } from 'selfsigned';

export interface Pem { cert: string; key: string }

const DAY = 864e5;
/** PEM text, or a file path (anything not starting with "-----BEGIN"). */
const pem = (v: string) => (v.startsWith('-----BEGIN') ? v : readFileSync(v, 'utf8'));

export interface Validity { notBefore?: Date; notAfter?: Date }

export async function makeCa(cn: string, validity: Validity = {}): Promise<Pem> {
  const r = await generate([{ name: 'commonName', value: cn }], {
    keyType: 'ec', algorithm: 'sha256',
    notBeforeDate: validity.notBefore ?? new Date(Date.now() - 3600e3), notAfterDate: validity.notAfter ?? new Date(Date.now() + 7 * DAY),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: r.cert, key: r.private };
}

/** A client certificate (ExtKeyUsage clientAuth) with CN/O, signed by `ca` (PEM text or file paths). */
export async function makeClientCert(ca: Pem, cn: string, orgs: string[] = [], validity: Validity = {}): Promise<Pem> {
  const attrs = [{ name: 'commonName', value: cn }, ...orgs.map((o) => ({ name: 'organizationName', value: o }))];
  const r = await generate(attrs, {
    keyType: 'ec', algorithm: 'sha256', ca: { cert: pem(ca.cert), key: pem(ca.key) },
    notBeforeDate: validity.notBefore ?? new Date(Date.now() - 3600e3), notAfterDate: validity.notAfter ?? new Date(Date.now() + 7 * DAY),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', clientAuth: true },
    ],
  });
  return { cert: r.cert, key: r.private };
}
