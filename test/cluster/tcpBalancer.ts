// A TCP round-robin balancer in front of our replicas, as kube-proxy puts a Service in front of a
// Deployment's pods: each new connection goes to the next backend that accepts it (TLS passes
// through untouched). Connections, not requests, are balanced: kube-apiserver's HTTP/2 connection to
// us stays on one replica until it breaks, as it does in a cluster.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpBalancer {
  readonly port: number;
  close(): Promise<void>;
}

const CONNECT_TIMEOUT_MS = 2_000;

export async function startTcpBalancer(backends: () => number[], port = 0): Promise<TcpBalancer> {
  let next = 0;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => { sockets.add(s); s.once('close', () => sockets.delete(s)); };

  /** The first backend, from the round-robin position on, that accepts a connection. */
  const dial = (ports: number[], tried = 0): Promise<{ socket: Socket; port: number } | undefined> => {
    if (tried >= ports.length) return Promise.resolve(undefined);
    const target = ports[next++ % ports.length];
    return new Promise((resolve) => {
      const s = connect({ host: '127.0.0.1', port: target });
      s.setTimeout(CONNECT_TIMEOUT_MS, () => s.destroy(new Error('connect timeout')));
      s.once('connect', () => { s.setTimeout(0); resolve({ socket: s, port: target }); });
      s.once('error', () => resolve(dial(ports, tried + 1)));
    });
  };

  const server: Server = createServer((client) => {
    track(client);
    client.pause();
    client.on('error', () => client.destroy());
    void dial(backends()).then((up) => {
      if (!up || client.destroyed) { up?.socket.destroy(); client.destroy(); return; }
      const { socket } = up;
      track(socket);
      socket.on('error', () => client.destroy());
      client.on('close', () => socket.destroy());
      socket.on('close', () => client.destroy());
      client.pipe(socket);
      socket.pipe(client);
      client.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('balancer has no port');
  return {
    port: address.port,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
