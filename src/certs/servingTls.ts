// The live TLS context: serving pair (hot-reloaded from files) plus the client CAs advertised in the
// handshake (from the trust ConfigMap), so the front proxy's Go client knows to send its certificate.
import type { Server as TlsServer } from 'node:tls';

export class ServingTls {
  private clientCAs: string[] = [];

  constructor(private readonly server: TlsServer, private pair: { cert: string; key: string }) {}

  setPair(pair: { cert: string; key: string }): void {
    this.pair = pair;
    this.apply();
  }

  setClientCAs(pems: string[]): void {
    this.clientCAs = pems.filter((p) => p.trim() !== '');
    this.apply();
  }

  private apply(): void {
    this.server.setSecureContext({ ...this.pair, ...(this.clientCAs.length ? { ca: this.clientCAs } : {}) });
  }
}
