// Client-certificate chains, verified against one CA bundle at a time (a delegated apiserver has two:
// the front proxy's and ordinary clients'). A TLS connection's peer certificate cannot change (the
// server refuses renegotiation), so the chain is parsed once per connection and each verdict is kept
// per connection and bundle; a rotated bundle is a new array, so rotation takes effect at once.
import { X509Certificate } from 'node:crypto';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';

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

type Subject = { CN?: string | string[]; O?: string | string[] };

/** A verdict holds while `now` is inside the validity window of every certificate on the path it found. */
interface Verdict { ok: boolean; from: number; to: number }

export interface PeerCert {
  chain: X509Certificate[];
  subject: Subject;
  /** Per CA bundle (by identity): the bundle is replaced, never mutated, when the trust changes. */
  readonly verdicts: WeakMap<readonly X509Certificate[], Verdict>;
}

/** How much certificate work was done: tests check it happens per connection, not per request. */
export const x509Work = { chainParses: 0, verifications: 0 };

/** The connection a request arrived on: the TLS socket (HTTP/1.1) or the HTTP/2 session. */
export interface RawRequest { socket: unknown; stream?: { session?: { socket: unknown } } }

const connections = new WeakMap<object, PeerCert | null>();

/** The client certificate and the intermediates it sent, or undefined when it sent none. */
export function peerCert(raw: RawRequest): PeerCert | undefined {
  const session = raw.stream?.session;
  const key = (session ?? raw.socket) as object;
  let peer = connections.get(key);
  if (peer === undefined) {
    peer = readPeer((session ? session.socket : raw.socket) as TLSSocket);
    connections.set(key, peer);
  }
  return peer ?? undefined;
}

function readPeer(socket: TLSSocket): PeerCert | null {
  if (typeof socket?.getPeerCertificate !== 'function') return null;
  const leaf = socket.getPeerCertificate(true) as DetailedPeerCertificate;
  if (!leaf || !leaf.raw) return null;
  x509Work.chainParses++;
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  for (let c: DetailedPeerCertificate | undefined = leaf; c?.raw && !seen.has(c.fingerprint256); c = c.issuerCertificate) {
    seen.add(c.fingerprint256);
    chain.push(new X509Certificate(c.raw));
  }
  return { chain, subject: leaf.subject ?? {}, verdicts: new WeakMap() };
}

/** True when the chain leads from a client-auth leaf to one of `roots` (as Go's x509.Verify with ExtKeyUsageClientAuth). */
export function verifiesAgainst(peer: PeerCert, roots: readonly X509Certificate[], now = Date.now()): boolean {
  let v = peer.verdicts.get(roots);
  if (v === undefined || now < v.from || now > v.to) {
    v = verify(peer.chain, roots, now);
    peer.verdicts.set(roots, v);
  }
  return v.ok;
}

const validity = new WeakMap<X509Certificate, { from: number; to: number }>();
function windowOf(c: X509Certificate): { from: number; to: number } {
  let w = validity.get(c);
  if (!w) validity.set(c, (w = { from: Date.parse(c.validFrom), to: Date.parse(c.validTo) }));
  return w;
}
const valid = (c: X509Certificate, now: number) => { const w = windowOf(c); return w.from <= now && now <= w.to; };
const signedBy = (c: X509Certificate, issuer: X509Certificate) => c.checkIssued(issuer) && c.verify(issuer.publicKey);

function verify(chain: X509Certificate[], roots: readonly X509Certificate[], now: number): Verdict {
  x509Work.verifications++;
  const [leaf, ...intermediates] = chain;
  // A refusal stands until the bundle changes or a certificate involved enters or leaves its validity.
  const refused = (): Verdict => ({ ok: false, ...narrowTo(now, [...chain, ...roots]) });
  if (!leaf || roots.length === 0 || !valid(leaf, now)) return refused();
  const usages = leaf.keyUsage as string[] | undefined;
  if (usages && usages.length && !usages.includes(clientAuthOid)) return { ok: false, from: -Infinity, to: Infinity };
  const path = [leaf];
  let current = leaf;
  for (let depth = 0; depth < 5; depth++) {
    const root = roots.find((r) => valid(r, now) && signedBy(current, r));
    if (root) return { ok: true, ...narrowTo(now, [...path, root]) };
    const next = intermediates.find((i) => i !== current && i.ca && valid(i, now) && signedBy(current, i));
    if (!next) return refused();
    path.push(next);
    current = next;
  }
  return refused();
}

/** The span around `now` in which every certificate of `path` is (or, for a refusal, stays) as it is now. */
function narrowTo(now: number, path: X509Certificate[]): { from: number; to: number } {
  let from = -Infinity;
  let to = Infinity;
  for (const c of path) {
    const w = windowOf(c);
    if (w.from <= now) from = Math.max(from, w.from); else to = Math.min(to, w.from - 1);
    if (w.to >= now) to = Math.min(to, w.to); else from = Math.max(from, w.to + 1);
  }
  return { from, to };
}

export function commonName(subject: Subject): string | undefined {
  return Array.isArray(subject.CN) ? subject.CN[0] : subject.CN;
}

export function organizations(subject: Subject): string[] {
  const o = subject.O;
  return o === undefined ? [] : Array.isArray(o) ? o : [o];
}
