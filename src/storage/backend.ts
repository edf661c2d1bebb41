// A storage backend as the server sees it (kube's storagebackend.Config + factory): it makes one
// Storage per resource, starts and stops them together and says how it is doing for /livez and
// /readyz. Adding a backend = one file implementing this, plus its tests.
import type { CacheView, Storage } from './interfaces.js';

/** The storage of one stored resource: the contract, plus the in-process view of its cache. */
export interface ResourceStorage extends Storage {
  /** Read-only in-process handle (resources that embed this one's data, tests, benchmarks). */
  readonly view: CacheView;
}

/** A named health check of the backend: undefined = healthy, else why not (kube's healthz.HealthChecker). */
export interface BackendCheck {
  name: string;
  check(): Promise<string | undefined>;
}

/** The minimal logger a backend writes to (pino's shape). */
export interface BackendLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface StorageBackend {
  /** "memory", "etcd3": logged at start-up. */
  readonly name: string;
  /** The storage of one resource, keyed "<group>/<resource>" (e.g. "farm.example.com/llamas"). Before start(). */
  forResource(resource: string, historyLimit: number): ResourceStorage;
  /** Starts every storage made so far; resolves at once, they become ready on their own (see `readyz`). */
  start(): void;
  /** Stops them and releases connections. */
  stop(): Promise<void>;
  /** Checks for /livez (and /readyz, /healthz): the backend is reachable. */
  readonly livez: BackendCheck[];
  /** Checks for /readyz only: every resource's storage can serve. */
  readonly readyz: BackendCheck[];
}
