// Request bodies: one parser for every media type we decode (JSON and its patch flavours, YAML),
// bounded in time, depth and amplification; the verb handlers say which media types they take.
import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { decodeLargeJsonBody, type DecodedJson } from '../apimachinery/jsonBody.js';
import { discardUnreadBody, isHttp2 } from './protocol.js';
import { errors } from '../apimachinery/status.js';
import { mediaTypeOf, OBJECT_MEDIA_TYPES, PATCH_MEDIA_TYPES } from './mediaTypes.js';
import type { YamlCodec } from '../apimachinery/yamlCodec.js';

/** Maximum accepted request body (same limit as kube-apiserver). Not configurable. */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    /** The body's media type, lower case without parameters; '' when the request named none. */
    bodyMediaType?: string;
    /** Strict decoding errors about the body's repeated keys (DecodedJson), for fieldValidation to act on. */
    duplicateFields?: string[];
    /** Top-level fields written as `5.0` or `1e2` (see DecodedJson). */
    fractionLiterals?: Map<string, string>;
  }
}

const jsonTypes = ['application/json', 'application/merge-patch+json', 'application/json-patch+json', 'application/strategic-merge-patch+json'];
const yamlTypes = ['application/yaml', 'application/apply-patch+yaml'];

/** 415 unless the body (if any) came in one of `accepted`; no Content-Type counts as JSON, as kube reads it. */
export function requireMediaType(req: FastifyRequest, accepted: string[]): void {
  const type = req.bodyMediaType;
  if (type === undefined) return; // no body
  if (type === '' ? accepted.includes('application/json') : accepted.includes(type)) return;
  throw errors.unsupportedMediaType(accepted);
}

export interface BodyOptions {
  yaml: YamlCodec;
  /** A body not received completely by then is refused with 504, as kube's request timeout would. */
  timeoutMs: number;
}

export function installBodyParsers(app: FastifyInstance, opts: BodyOptions): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, raw, done) => {
    const text = (raw as Buffer).toString('utf8');
    if (text.trim() === '') return done(null, undefined); // nothing to decode: its media type does not matter
    const type = mediaTypeOf(req.headers['content-type']);
    req.bodyMediaType = type;
    const finish = (d: DecodedJson) => { req.duplicateFields = d.duplicateFields; req.fractionLiterals = d.fractionLiterals; done(null, d.value); };
    if (type === '' || jsonTypes.includes(type)) {
      decodeLargeJsonBody(text).then(finish, (e: Error) => done(e));
    } else if (yamlTypes.includes(type)) {
      opts.yaml.decode(text).then(finish, (e: Error) => done(e));
    } else {
      done(errors.unsupportedMediaType([...OBJECT_MEDIA_TYPES, ...PATCH_MEDIA_TYPES]));
    }
  });

  // A body that never ends must not hold the request (and its socket) forever.
  app.addHook('preParsing', (req, reply, payload, done) => {
    const h = req.headers;
    const hasBody = h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0');
    if (!hasBody || req.method === 'GET' || req.method === 'HEAD') return done(null, payload);
    const guarded = new PassThrough();
    guarded.on('error', () => {}); // the parser reports it; unread (e.g. after a 401) it must not throw
    const timer = setTimeout(() => {
      payload.unpipe(guarded);
      guarded.destroy(errors.timeout('request did not complete within requested timeout - context deadline exceeded', 0));
    }, opts.timeoutMs);
    const stop = () => clearTimeout(timer);
    guarded.once('end', stop);
    guarded.once('close', stop);
    reply.raw.once('close', stop);
    payload.once('error', (e) => guarded.destroy(e));
    payload.pipe(guarded);
    done(null, guarded);
  });

  // An answer given before the body was read (401, 404, a GET with a body) closes the connection once
  // written, rather than reading the rest at the client's pace (as Go's server does past a small
  // remainder); under HTTP/2 only that stream's rest is dropped (protocol.ts).
  app.addHook('onSend', (req, reply, payload, done) => {
    if (isHttp2(req.raw)) reply.removeHeader('connection'); // fastify's own (after a body error) is HTTP/1.1's
    if (!req.raw.complete) discardUnreadBody(reply, opts.timeoutMs);
    done(null, payload);
  });
}
