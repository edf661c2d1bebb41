// Watch responses: newline-delimited {"type","object"} events over chunked HTTP, fed by a
// CacheWatcher's bounded queue so a slow client never blocks writers or other watchers.
import { drained } from './bodyBuilder.js';
import { isHttp2 } from './protocol.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TooOldError, type CacheWatcher, type ObjectCache, type WatchItem } from '../storage/cacher/objectCache.js';
import type { ListOptions } from './listOptions.js';
import { parseRV } from './listOptions.js';
import type { Output } from './negotiation.js';
import { waitUntilFresh, type Selection } from './query.js';
import { apiVersionOf, type ResourceDefinition } from '../registry/resource.js';
import { errors } from '../apimachinery/status.js';
import { partialObjectMetadata, table, type IncludeObject } from './table.js';

export interface WatchSettings {
  /** Buffered events per watcher before it is closed for falling behind. */
  queueCapacity: number;
  bookmarkIntervalMs: number;
  /** Open watch streams, so shutdown can end them cleanly. */
  registry: Set<CacheWatcher>;
}

interface WatchRequest {
  def: ResourceDefinition;
  cache: ObjectCache;
  sel: Selection;
  listOpts: ListOptions;
  out: Output;
  includeObject: IncludeObject;
  settings: WatchSettings;
}

export async function serveWatch(req: FastifyRequest, reply: FastifyReply, w: WatchRequest): Promise<FastifyReply> {
  const { listOpts, cache, sel } = w;
  const rv = parseRV(listOpts.resourceVersion);
  const initial = listOpts.sendInitialEvents ?? (rv === undefined || rv === 0);
  // A resume point this server has not reached yet (the future, or another process's): wait, then 504.
  if (!initial) await waitUntilFresh(cache, listOpts.resourceVersion);
  // The client may have gone while authentication/authorization awaited: subscribe nothing then.
  if (req.raw.socket.destroyed) {
    reply.hijack();
    return reply;
  }
  let watcher: CacheWatcher | undefined;
  let tooOld: TooOldError | undefined;
  try {
    watcher = cache.watch({
      fromRV: initial ? undefined : rv,
      initialState: initial,
      initialEndMarker: listOpts.sendInitialEvents === true,
      prefix: sel.prefix,
      matches: sel.matches,
      capacity: w.settings.queueCapacity,
    });
  } catch (e) {
    if (!(e instanceof TooOldError)) throw e;
    tooOld = e;
  }

  reply.hijack();
  const res = reply.raw;
  // HTTP/2 frames the stream itself (a Transfer-Encoding header is forbidden there).
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', ...(isHttp2(req.raw) ? {} : { 'Transfer-Encoding': 'chunked' }) });
  res.flushHeaders();
  if (tooOld || !watcher) {
    res.end(line('ERROR', JSON.stringify(errors.expired(tooOld!.message).toStatus())));
    return reply;
  }
  const open = watcher;
  w.settings.registry.add(open);
  const encode = encoder(w);
  // kube-apiserver's default (also for timeoutSeconds=0): a random 30–60 minutes; timers cap at 2^31-1 ms.
  // A negative timeout is a context already expired upstream: the watch ends at once.
  const t = listOpts.timeoutSeconds;
  const seconds = t === undefined || t === 0 ? 1800 * (1 + Math.random()) : Math.max(t, 0);
  const timer = setTimeout(() => open.close(), Math.min(seconds * 1000, 2 ** 31 - 1));
  const bookmarks = listOpts.allowWatchBookmarks
    ? setInterval(() => { if (open.pending() === 0) open.requestBookmark(); }, w.settings.bookmarkIntervalMs)
    : undefined;
  const stop = () => open.close();
  res.on('close', stop);
  const socket = req.raw.socket;
  socket.once('close', stop); // kept-alive sockets outlive the watch: removed in finally (HTTP/2: the stream's)
  if (res.destroyed || socket.destroyed) stop();
  try {
    for (;;) {
      const item = await open.next();
      if (!item) break;
      let chunk = encode(item);
      while (open.pending() > 0 && chunk.length < 64 * 1024) {
        const more = await open.next();
        if (!more) break;
        chunk += encode(more);
      }
      if (res.destroyed) break;
      if (!res.write(chunk)) await drained(res);
    }
  } finally {
    socket.off('close', stop);
    clearTimeout(timer);
    if (bookmarks) clearInterval(bookmarks);
    w.settings.registry.delete(open);
    open.close();
    if (!res.destroyed) res.end();
  }
  return reply;
}

const line = (type: string, object: string) => `{"type":"${type}","object":${object}}\n`;

/** Encodes items in the negotiated format; Table events carry column definitions only once. */
function encoder(w: WatchRequest): (item: WatchItem) => string {
  const { def, out } = w;
  let columnsSent = false;
  // k8s.io/apiserver 1.33 (watchListTransformer): the initial-events-end bookmark of a watch-list carries
  // an empty list of the requested type, JSON-encoded and base64'd, for clients to build their list from.
  const blueprintList = out.format === 'metadata'
    ? `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${out.version}","metadata":{},"items":null}\n`
    : `{"kind":"${def.kind}List","apiVersion":"${apiVersionOf(def)}","metadata":{},"items":null}\n`;
  const blueprint = Buffer.from(blueprintList).toString('base64');
  const bookmarkObject = (rv: number, initialEnd: boolean) => {
    const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
    if (initialEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true', 'kubernetes.io/initial-events-list-blueprint': blueprint };
    switch (out.format) {
      case 'metadata': return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${out.version}","metadata":${JSON.stringify(metadata)}}`;
      case 'table': return table(def, [], { resourceVersion: String(rv) }, { version: out.version, includeObject: 'None', withColumns: false });
      default: return `{"kind":"${def.kind}","apiVersion":"${apiVersionOf(def)}","metadata":${JSON.stringify(metadata)}}`;
    }
  };
  return (item) => {
    if (!('entry' in item)) return line('BOOKMARK', bookmarkObject(item.rv, item.type === 'INITIAL_END'));
    const { entry } = item;
    switch (out.format) {
      case 'metadata': return line(item.type, partialObjectMetadata(entry.object, out.version));
      case 'table': {
        const t = table(def, [entry], { resourceVersion: entry.object.metadata.resourceVersion ?? String(entry.rv) }, { version: out.version, includeObject: w.includeObject, withColumns: !columnsSent });
        columnsSent = true;
        return line(item.type, t);
      }
      default: return line(item.type, entry.json);
    }
  };
}
