// Client-certificate chain checks against one CA bundle, done per request because the two CAs of a
// delegated apiserver mean different things (front proxy vs. ordinary clients).
import { X509Certificate } from 'node:crypto';
import type { TLSSocket, DetailedPeerCertificate } from 'node:tls';

const clientAuthOid = '1.3.6.1.5.5.7.3.2';

export function parsePemBundle(pem: string | undefined): X509Certificate[] {
  if (!pem) return [];
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const certs: X509Certificate[] = [];
  for (const b of blocks) {
    try { certs.push(new X509Certificate(b)); } catch { /* skip an unparsable block like Go's AppendCertsFromPEM */ }
  }
  return certs;
}

export interface PeerCert { chain: X509Certificate[]; subject: { CN?: string | string[]; O?: string | string[] } }

/** The client certificate and the intermediates it sent, or undefined when it sent none. */
export function peerCert(socket: TLSSocket): PeerCert | undefined {
  if (typeof socket.getPeerCertificate !== 'function') return undefined;
  const leaf = socket.getPeerCertificate(true) as DetailedPeerCertificate;
  if (!leaf || !leaf.raw) return undefined;
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  for (let c: DetailedPeerCertificate | undefined = leaf; c?.raw && !seen.has(c.fingerprint256); c = c.issuerCertificate) {
    seen.add(c.fingerprint256);
    chain.push(new X509Certificate(c.raw));
  }
  return { chain, subject: leaf.subject ?? {} };
}

const valid = (c: X509Certificate, now: number) => Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
const signedBy = (c: X509Certificate, issuer: X509Certificate) => c.checkIssued(issuer) && c.verify(issuer.publicKey);

/** True when the chain leads from a client-auth leaf to one of `roots` (as Go's x509.Verify with ExtKeyUsageClientAuth). */
export function verifiesAgainst(chain: X509Certificate[], roots: X509Certificate[], now = Date.now()): boolean {
  const [leaf, ...intermediates] = chain;
  if (!leaf || roots.length === 0 || !valid(leaf, now)) return false;
  const usages = leaf.keyUsage as string[] | undefined;
  if (usages && usages.length && !usages.includes(clientAuthOid)) return false;
  let current = leaf;
  for (let depth = 0; depth < 5; depth++) {
    if (roots.some((r) => valid(r, now) && signedBy(current, r))) return true;
    const next = intermediates.find((i) => i !== current && i.ca && valid(i, now) && signedBy(current, i));
    if (!next) return false;
    current = next;
  }
  return false;
}

export function commonName(subject: PeerCert['subject']): string | undefined {
  return Array.isArray(subject.CN) ? subject.CN[0] : subject.CN;
}

export function organizations(subject: PeerCert['subject']): string[] {
  const o = subject.O;
  return o === undefined ? [] : Array.isArray(o) ? o : [o];
}
