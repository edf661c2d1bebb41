// Checks a serving certificate and key before they are served, with a reason a person can act on:
// OpenSSL's own ("DECODER routines::unsupported") names neither file, and createSecureContext
// accepts empty PEM text, which would only fail at the first handshake.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { createSecureContext } from 'node:tls';

export interface ServingPairNames {
  /** How to name the certificate in a message: its path. */
  certFile: string;
  keyFile: string;
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----/;
const PRIVATE_KEY_BLOCK = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;
/** PKCS#8 encrypted, or the traditional OpenSSL format's header. */
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|^Proc-Type: 4,ENCRYPTED/m;

function parseCertificate(pem: string, file: string): X509Certificate {
  if (!CERTIFICATE_BLOCK.test(pem)) {
    throw new Error(PRIVATE_KEY_BLOCK.test(pem) ? `${file} holds a private key, not a certificate` : `${file} holds no PEM certificate`);
  }
  try {
    return new X509Certificate(pem);
  } catch {
    throw new Error(`${file} holds a PEM certificate that does not parse`);
  }
}

function parsePrivateKey(pem: string, file: string): KeyObject {
  if (!PRIVATE_KEY_BLOCK.test(pem)) {
    throw new Error(CERTIFICATE_BLOCK.test(pem) ? `${file} holds a certificate, not a private key` : `${file} holds no PEM private key`);
  }
  if (ENCRYPTED_KEY.test(pem)) throw new Error(`${file} is encrypted (a passphrase is not supported)`);
  try {
    return createPrivateKey(pem);
  } catch {
    throw new Error(`${file} holds a PEM private key that does not parse`);
  }
}

/** Throws an Error naming the file at fault when the pair cannot serve TLS. */
export function checkServingPair(pem: { cert: string; key: string }, names: ServingPairNames): void {
  const certificate = parseCertificate(pem.cert, names.certFile);
  const key = parsePrivateKey(pem.key, names.keyFile);
  if (!certificate.checkPrivateKey(key)) throw new Error(`${names.keyFile} is not the key of the certificate in ${names.certFile}`);
  try {
    createSecureContext({ cert: pem.cert, key: pem.key }); // what serving will do; e.g. a garbled chain after the first certificate
  } catch (e) {
    throw new Error(`${names.certFile} with ${names.keyFile}: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}`);
  }
}
