// Watch responses: newline-delimited {"type","object"} events over chunked HTTP, fed by a
// storage Watcher's bounded queue so a slow client never blocks writers or other watchers.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { ApiError } from '../../apimachinery/status.js';
import { waitForTurn } from '../../apimachinery/turns.js';
import type { ListOptions } from '../../apimachinery/options.js';
import { apiVersionOf, type ResourceDefinition } from '../../registry/resource.js';
import type { RequestContext } from '../../registry/rest.js';
import type { Watcher, WatchItem } from '../../storage/interfaces.js';
import { eventBytes, eventLine, eventWriter, objectBytes, sharedEventLine, type EventBytes, type EventWriter } from '../eventLines.js';
import { one } from '../listOptions.js';
import { negotiate, type Output } from '../negotiation.js';
import { abortResponse, isHttp11, responseGone } from '../protocol.js';
import { parseIncludeObject, partialObjectMetadata, table, type IncludeObject } from '../table.js';
import type { Req, RequestScope } from './scope.js';

export interface WatchSettings {
  /** Buffered events per watcher before it is closed for falling behind. */
  queueCapacity: number;
  bookmarkIntervalMs: number;
  /** How long a watch that ended waits for its client to read what was written before it is cut (default 30 s). */
  endDrainMs?: number;
  /**
   * Open watch streams, so shutdown can end them; one leaves once its response has ended and its
   * bytes were taken, or it was cut. Ending one through here (a shutdown) leaves its client 0.5 s.
   */
  registry: Set<WatchHandle>;
  /** Told of each watch stream and its events (the server layer's metrics). */
  observer?: WatchObserver;
}

/** An open watch stream as the server sees it. */
export type WatchHandle = Pick<Watcher, 'close' | 'closedReason'>;

/** Sees watch streams from the layer above (no import runs up): kube's longrunning and watch-event metrics. */
export interface WatchObserver {
  /** A stream starts (its 200 head is written); `req` is the raw request. */
  opened(req: object, kind: { group: string; version: string; kind: string }): WatchStreamObserver;
}
export interface WatchStreamObserver {
  /** One event is encoded; `objectBytes` is the size of its embedded object, as upstream measures it. */
  event(objectBytes: number): void;
  /** Body bytes written to the socket directly (HTTP/1.1), which a wrapper of res.write does not see. */
  bodyWritten(bytes: number): void;
  closed(): void;
}

interface WatchRequest {
  def: ResourceDefinition;
  out: Output;
  includeObject: IncludeObject;
}

export async function serveWatch(scope: RequestScope, req: Req, reply: FastifyReply, ctx: RequestContext, listOpts: ListOptions): Promise<FastifyReply> {
  const out = negotiate(req.headers.accept, 'watch');
  const settings = scope.opts.watch;
  let watcher: Watcher | undefined;
  let tooOld: ApiError | undefined;
  try {
    // A resume point this server has not reached yet (the future, or another replica's) waits, then 504.
    watcher = await scope.rest().watch(ctx, listOpts, settings.queueCapacity);
  } catch (e) {
    // Too old: a 200 whose one event is the 410 Status (the watch cache answers so).
    if (!(e instanceof ApiError && e.code === 410)) throw e;
    tooOld = e;
  }
  // Upstream reads includeObject only once the watch is open (selectors are parsed first).
  let includeObject: IncludeObject;
  try {
    includeObject = parseIncludeObject(one(req.query, 'includeObject'));
  } catch (e) {
    watcher?.close();
    throw e;
  }
  const w: WatchRequest = { def: scope.def, out, includeObject };
  // The client may have gone while authentication/authorization awaited: keep nothing open then.
  if (req.raw.socket.destroyed) {
    watcher?.close();
    reply.hijack();
    return reply;
  }

  reply.hijack();
  const res = reply.raw;
  // HTTP/2 frames the stream itself (a Transfer-Encoding header is forbidden there); an HTTP/1.0 client
  // reads to the connection's end (node closes it after the response), as Go's server answers it.
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', ...(isHttp11(req.raw) ? { 'Transfer-Encoding': 'chunked' } : {}) });
  res.flushHeaders();
  const observed = settings.observer?.opened(req.raw, { group: scope.def.group, version: scope.def.version, kind: scope.def.kind });
  if (tooOld || !watcher) {
    const status = JSON.stringify(tooOld!.toStatus());
    observed?.event(Buffer.byteLength(status));
    observed?.closed();
    res.end(eventLine('ERROR', status));
    return reply;
  }
  const open = watcher;
  const end = new EndDeadline(open, settings.endDrainMs ?? END_DRAIN_MS);
  const handle: WatchHandle = {
    close: () => { open.close(); end.shorten(SHUTDOWN_DRAIN_MS); },
    get closedReason() { return open.closedReason; },
  };
  settings.registry.add(handle);
  const encode = encoder(w, observed);
  const writer = eventWriter(req.raw, res, (n) => observed?.bodyWritten(n));
  // kube-apiserver's default (also for timeoutSeconds=0): a random 30–60 minutes; timers cap at 2^31-1 ms.
  // A negative timeout is a context already expired upstream: the watch ends at once.
  const t = listOpts.timeoutSeconds;
  const seconds = t === undefined || t === 0 ? 1800 * (1 + Math.random()) : Math.max(t, 0);
  const timer = setTimeout(() => open.close(), Math.min(seconds * 1000, 2 ** 31 - 1));
  const bookmarks = listOpts.allowWatchBookmarks
    ? setInterval(() => { if (open.pending() === 0) open.requestBookmark(); }, settings.bookmarkIntervalMs)
    : undefined;
  const stop = () => open.close();
  res.on('close', stop);
  const socket = req.raw.socket;
  socket.once('close', stop); // kept-alive sockets outlive the watch: removed in finally (HTTP/2: the stream's)
  if (responseGone(res) || socket.destroyed) stop();
  try {
    for (;;) {
      const item = await open.next();
      if (!item) break;
      // One event woken for thousands of watchers: their encoding and TLS writes share a turn's budget.
      const room = waitForTurn();
      if (room) await room;
      const lines = [encode(item)];
      let size = lines[0].bytes.length;
      while (open.pending() > 0 && size < 64 * 1024) {
        const more = await open.next();
        if (!more) break;
        const b = encode(more);
        lines.push(b);
        size += b.bytes.length;
      }
      if (!(await writeEvents(writer, lines, res, end))) break;
    }
  } finally {
    socket.off('close', stop);
    clearTimeout(timer);
    if (bookmarks) clearInterval(bookmarks);
    open.close();
    observed?.closed();
    if (!responseGone(res)) {
      res.end();
      // What is still queued for the client (less than a socket's high-water mark) gets the same deadline.
      if ((await end.race(finished(res))) === 'cut') abortResponse(res);
    }
    // Only now: a shutdown waits for the registry to empty before it closes idle connections.
    settings.registry.delete(handle);
  }
  return reply;
}

/** Writes the lines piece by piece, each after the last drained; false when the response is gone or was cut. */
async function writeEvents(writer: EventWriter, lines: EventBytes[], res: ServerResponse, end: EndDeadline): Promise<boolean> {
  for (const piece of writer.pieces(lines)) {
    if (responseGone(res)) return false;
    if (!writer.write(piece) && (await end.race(writer.drained())) === 'cut') {
      abortResponse(res);
      return false;
    }
  }
  return true;
}

/** How long a watch that ended (timeout, overflow, its client's close) waits for its client to read what was sent. */
const END_DRAIN_MS = 30_000;
/** The same when the server ends it (shutdown): within the 1 s the shutdown waits for watches. */
const SHUTDOWN_DRAIN_MS = 500;

/**
 * When a watch whose client stopped reading is cut: `graceMs` after the watch ended (timeout, overflow,
 * shutdown), one deadline for every wait that follows. Without it the handler, its socket and the bytes
 * queued for it stay until the client disconnects (kube-apiserver's handler blocks in its write just so).
 * A slow client that reads again within it gets the clean end.
 */
class EndDeadline {
  private at: number | undefined;
  private moved: (() => void) | undefined;

  constructor(open: Watcher, graceMs: number) {
    void open.closed().then(() => this.shorten(graceMs));
  }

  /** The deadline is `ms` from now, unless it is sooner already. */
  shorten(ms: number): void {
    const at = performance.now() + ms;
    if (this.at !== undefined && this.at <= at) return;
    this.at = at;
    this.moved?.();
  }

  /** 'done' once `wait` resolves, 'cut' if the deadline comes first. */
  async race(wait: Promise<void>): Promise<'done' | 'cut'> {
    const done = wait.then(() => 'done' as const);
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const at = this.at;
      const moved = new Promise<'moved'>((resolve) => { this.moved = () => resolve('moved'); });
      const cut = at === undefined ? [] : [new Promise<'cut'>((resolve) => { timer = setTimeout(() => resolve('cut'), Math.max(0, at - performance.now())); })];
      const how = await Promise.race([done, moved, ...cut]);
      clearTimeout(timer);
      this.moved = undefined;
      if (how !== 'moved') return how;
    }
  }
}

/** Resolves once everything written was handed to the client's connection, or the response is gone. */
function finished(res: ServerResponse): Promise<void> {
  if (res.writableFinished || responseGone(res)) return Promise.resolve();
  return new Promise((resolve) => {
    res.once('finish', () => resolve());
    res.once('close', () => resolve());
  });
}

/** Encodes items in the negotiated format; Table events carry column definitions only once. */
function encoder(w: WatchRequest, observed: WatchStreamObserver | undefined): (item: WatchItem) => EventBytes {
  const { def, out } = w;
  const sized = (type: string, line: EventBytes) => {
    observed?.event(objectBytes(type, line));
    return line;
  };
  const event = (type: string, object: string) => sized(type, eventBytes([eventLine(type, object)]));
  let columnsSent = false;
  // k8s.io/apiserver 1.33 (watchListTransformer): the initial-events-end bookmark of a watch-list carries
  // an empty list of the requested type, JSON-encoded and base64'd, for clients to build their list from.
  const blueprintList = out.format === 'metadata'
    ? `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${out.version}","metadata":{},"items":null}\n`
    : `{"kind":"${def.kind}List","apiVersion":"${apiVersionOf(def)}","metadata":{},"items":null}\n`;
  const blueprint = Buffer.from(blueprintList).toString('base64');
  const bookmarkObject = (rv: number | string, initialEnd: boolean) => {
    const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
    if (initialEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true', 'kubernetes.io/initial-events-list-blueprint': blueprint };
    switch (out.format) {
      case 'metadata': return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${out.version}","metadata":${JSON.stringify(metadata)}}`;
      case 'table': return table(def, [], { resourceVersion: String(rv) }, { version: out.version, includeObject: 'None', withColumns: false });
      default: return `{"kind":"${def.kind}","apiVersion":"${apiVersionOf(def)}","metadata":${JSON.stringify(metadata)}}`;
    }
  };
  return (item) => {
    if (!('entry' in item)) return event('BOOKMARK', bookmarkObject(item.rv, item.type === 'INITIAL_END'));
    const { entry } = item;
    switch (out.format) {
      case 'metadata': return event(item.type, partialObjectMetadata(entry.object, out.version));
      case 'table': {
        const t = table(def, [entry], { resourceVersion: entry.object.metadata.resourceVersion ?? String(entry.rv) }, { version: out.version, includeObject: w.includeObject, withColumns: !columnsSent });
        columnsSent = true;
        return event(item.type, t);
      }
      default: return sized(item.type, sharedEventLine(item.type, entry));
    }
  };
}
