// A real OTLP/gRPC trace receiver on 127.0.0.1 (opentelemetry.proto.collector.trace.v1.TraceService/
// Export over @grpc/grpc-js), decoding the exporter's protobuf itself: what the tests read is exactly
// what went over the wire, as a collector would receive it.
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';

export type AttrValue = string | boolean | number | bigint | Buffer | AttrValue[] | undefined;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  traceState: string;
  name: string;
  /** 1 internal, 2 server, 3 client (SpanKind of the proto). */
  kind: number;
  startNanos: bigint;
  endNanos: bigint;
  attributes: Record<string, AttrValue>;
  events: string[];
  links: { traceId: string; spanId: string }[];
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttrValue>;
  scope: string;
}

// ---- protobuf wire format: varints, fixed 32/64-bit and length-delimited fields ----

interface Field { no: number; varint?: bigint; bytes?: Buffer; fixed?: Buffer }

function fieldsOf(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
    }
    throw new Error('varint too long');
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    switch (key & 7) {
      case 0: out.push({ no, varint: varint() }); break;
      case 1: out.push({ no, fixed: buf.subarray(pos, pos + 8) }); pos += 8; break;
      case 2: { const len = Number(varint()); out.push({ no, bytes: buf.subarray(pos, pos + len) }); pos += len; break; }
      case 5: out.push({ no, fixed: buf.subarray(pos, pos + 4) }); pos += 4; break;
      default: throw new Error(`unsupported wire type ${key & 7}`);
    }
    if (pos > buf.length) throw new Error('truncated field');
  }
  return out;
}

const all = (fs: Field[], no: number) => fs.filter((f) => f.no === no);
const first = (fs: Field[], no: number) => fs.find((f) => f.no === no);
const text = (f: Field | undefined) => f?.bytes?.toString('utf8') ?? '';
const hex = (f: Field | undefined) => f?.bytes?.toString('hex') ?? '';

function anyValue(buf: Buffer): AttrValue {
  const f = fieldsOf(buf)[0];
  if (!f) return undefined;
  switch (f.no) {
    case 1: return text(f);
    case 2: return f.varint === 1n;
    case 3: return BigInt.asIntN(64, f.varint ?? 0n);
    case 4: return f.fixed?.readDoubleLE(0);
    case 5: return all(fieldsOf(f.bytes ?? Buffer.alloc(0)), 1).map((v) => anyValue(v.bytes ?? Buffer.alloc(0)));
    case 7: return f.bytes;
    default: return undefined;
  }
}

function attributes(fs: Field[], no: number): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of all(fs, no)) {
    const k = fieldsOf(kv.bytes ?? Buffer.alloc(0));
    out[text(first(k, 1))] = anyValue(first(k, 2)?.bytes ?? Buffer.alloc(0));
  }
  return out;
}

/** ExportTraceServiceRequest → spans, each with its resource's attributes and scope name. */
export function decodeExportRequest(buf: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of all(fieldsOf(buf), 1)) {
    const rsf = fieldsOf(rs.bytes ?? Buffer.alloc(0));
    const resource = attributes(fieldsOf(first(rsf, 1)?.bytes ?? Buffer.alloc(0)), 1);
    for (const ss of all(rsf, 2)) {
      const ssf = fieldsOf(ss.bytes ?? Buffer.alloc(0));
      const scope = text(first(fieldsOf(first(ssf, 1)?.bytes ?? Buffer.alloc(0)), 1));
      for (const sp of all(ssf, 2)) {
        const f = fieldsOf(sp.bytes ?? Buffer.alloc(0));
        const status = fieldsOf(first(f, 15)?.bytes ?? Buffer.alloc(0));
        spans.push({
          traceId: hex(first(f, 1)), spanId: hex(first(f, 2)), traceState: text(first(f, 3)), parentSpanId: hex(first(f, 4)),
          name: text(first(f, 5)), kind: Number(first(f, 6)?.varint ?? 0n),
          startNanos: first(f, 7)?.fixed?.readBigUInt64LE(0) ?? 0n, endNanos: first(f, 8)?.fixed?.readBigUInt64LE(0) ?? 0n,
          attributes: attributes(f, 9),
          events: all(f, 11).map((e) => text(first(fieldsOf(e.bytes ?? Buffer.alloc(0)), 2))),
          links: all(f, 13).map((l) => { const lf = fieldsOf(l.bytes ?? Buffer.alloc(0)); return { traceId: hex(first(lf, 1)), spanId: hex(first(lf, 2)) }; }),
          statusCode: Number(first(status, 3)?.varint ?? 0n),
          resource, scope,
        });
      }
    }
  }
  return spans;
}

export interface OtlpReceiver {
  /** host:port, as a TracingConfiguration's endpoint. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Export calls received (including empty ones). */
  requests: number;
  /** Resolves with the spans of `traceId` once `count` have arrived; rejects after `timeoutMs`. */
  waitForTrace(traceId: string, count: number, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const server = new Server();
  const identity = (b: Buffer) => b;
  const receiver: OtlpReceiver = {
    endpoint: '',
    spans: [],
    requests: 0,
    async waitForTrace(traceId, count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const got = receiver.spans.filter((s) => s.traceId === traceId);
        if (got.length >= count) return got;
        if (Date.now() > deadline) throw new Error(`trace ${traceId}: ${got.length} of ${count} spans after ${timeoutMs} ms: ${got.map((s) => s.name).join(', ')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => new Promise((r) => server.tryShutdown(() => r())),
  };
  server.addService({
    Export: {
      path: EXPORT_PATH, requestStream: false, responseStream: false, originalName: 'export',
      requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity,
    },
  }, {
    Export: (call: ServerUnaryCall<Buffer, Buffer>, done: sendUnaryData<Buffer>) => {
      receiver.requests++;
      receiver.spans.push(...decodeExportRequest(call.request));
      done(null, Buffer.alloc(0)); // an empty ExportTraceServiceResponse: all accepted
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  receiver.endpoint = `127.0.0.1:${port}`;
  return receiver;
}
