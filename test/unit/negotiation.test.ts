// Accept negotiation for objects, lists and watches: what kubectl, client-go's metadata client, the
// garbage collector and the namespace controller send, plus the edge cases of the header syntax.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { negotiate, parseAccept, type Output, type Target } from '../../src/endpoints/negotiation.js';
import { ApiError } from '../../src/apimachinery/status.js';

const KUBECTL_TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const NS_CONTROLLER_LIST = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const GC_WATCH = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const CLIENT_GO_DEFAULT = 'application/json, */*';

const json: Output = { format: 'json' };
const yaml: Output = { format: 'yaml' };
const table = (version: 'v1' | 'v1beta1'): Output => ({ format: 'table', version });
const metadata = (version: 'v1' | 'v1beta1'): Output => ({ format: 'metadata', version });

function notAcceptable(accept: string | undefined, target: Target) {
  assert.throws(() => negotiate(accept, target), (e: unknown) => {
    assert.ok(e instanceof ApiError);
    assert.equal(e.code, 406);
    assert.equal(e.reason, 'NotAcceptable');
    assert.match(e.message, /^only the following media types are accepted: /);
    assert.match(e.message, /application\/json/);
    return true;
  });
}

describe('parseAccept', () => {
  it('treats a missing header as */*', () => {
    assert.deepEqual(parseAccept(undefined), [{ type: '*', subtype: '*', params: {}, q: 1 }]);
    assert.deepEqual(parseAccept(''), [{ type: '*', subtype: '*', params: {}, q: 1 }]);
  });

  it('splits ranges and parameters, trims spaces, lowercases type and parameter names, unquotes values', () => {
    assert.deepEqual(parseAccept(' Application/JSON ; AS="Table" ; g=meta.k8s.io;v=v1 , text/plain'), [
      { type: 'application', subtype: 'json', params: { as: 'Table', g: 'meta.k8s.io', v: 'v1' }, q: 1 },
      { type: 'text', subtype: 'plain', params: {}, q: 1 },
    ]);
  });

  it('orders by q (stable among equals), drops q=0 and unparsable q, skips empty entries', () => {
    const r = parseAccept('application/yaml;q=0.5, ,application/json;q=0.9,text/html;q=0,application/xml;q=abc,*/*');
    assert.deepEqual(r.map((m) => `${m.type}/${m.subtype}@${m.q}`), ['*/*@1', 'application/json@0.9', 'application/yaml@0.5']);
    assert.deepEqual(parseAccept('a/b,c/d,e/f').map((m) => m.subtype), ['b', 'd', 'f']);
  });

  it('ignores parameters without a value and defaults a missing subtype to *', () => {
    assert.deepEqual(parseAccept('application;charset'), [{ type: 'application', subtype: '*', params: {}, q: 1 }]);
  });
});

describe('negotiate', () => {
  it('plain JSON for application/json, */*, application/*, no header, and client-go\'s default', () => {
    for (const target of ['object', 'list', 'watch'] as const) {
      for (const accept of [undefined, 'application/json', '*/*', 'application/*', CLIENT_GO_DEFAULT, 'application/json;charset=utf-8', 'application/json;stream=watch']) {
        assert.deepEqual(negotiate(accept, target), json, `${accept} for ${target}`);
      }
    }
  });

  it('YAML for objects and lists, not for watches', () => {
    assert.deepEqual(negotiate('application/yaml', 'object'), yaml);
    assert.deepEqual(negotiate('application/yaml', 'list'), yaml);
    notAcceptable('application/yaml', 'watch');
    assert.deepEqual(negotiate('application/yaml,application/json', 'watch'), json);
  });

  it('kubectl get\'s Accept gives a v1 Table for objects, lists and watches', () => {
    for (const target of ['object', 'list', 'watch'] as const) assert.deepEqual(negotiate(KUBECTL_TABLE, target), table('v1'));
  });

  it('a v1beta1 Table when that is the first acceptable Table', () => {
    assert.deepEqual(negotiate('application/json;as=Table;v=v1beta1;g=meta.k8s.io', 'list'), table('v1beta1'));
    assert.deepEqual(negotiate('application/json;as=Table;v=v2;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io', 'object'), table('v1beta1'));
  });

  it('skips transforms of another group, version or media type, falling through to the next alternative', () => {
    assert.deepEqual(negotiate('application/json;as=Table;v=v1;g=example.com,application/json', 'list'), json);
    assert.deepEqual(negotiate('application/json;as=Table;v=v1,application/json', 'list'), json, 'g is required');
    assert.deepEqual(negotiate('application/json;as=Table;g=meta.k8s.io,application/json', 'list'), json, 'v is required');
    assert.deepEqual(negotiate('application/yaml;as=Table;v=v1;g=meta.k8s.io,application/json', 'list'), json);
    assert.deepEqual(negotiate('application/json;as=Unknown;v=v1;g=meta.k8s.io,application/json', 'object'), json);
    notAcceptable('application/json;as=Table;v=v1;g=example.com', 'list');
  });

  it('the namespace controller\'s list Accept: protobuf skipped, PartialObjectMetadataList in JSON', () => {
    assert.deepEqual(negotiate(NS_CONTROLLER_LIST, 'list'), metadata('v1'));
  });

  it('the garbage collector\'s watch Accept: PartialObjectMetadata in JSON', () => {
    assert.deepEqual(negotiate(GC_WATCH, 'watch'), metadata('v1'));
    assert.deepEqual(negotiate(GC_WATCH, 'object'), metadata('v1'));
  });

  it('PartialObjectMetadata matches objects and watches, PartialObjectMetadataList matches lists only', () => {
    const pom = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
    const poml = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
    notAcceptable(pom, 'list');
    notAcceptable(poml, 'object');
    notAcceptable(poml, 'watch');
    assert.deepEqual(negotiate(`${pom},${poml}`, 'list'), metadata('v1'));
    assert.deepEqual(negotiate(`${poml},${pom}`, 'object'), metadata('v1'));
    assert.deepEqual(negotiate('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1', 'object'), metadata('v1beta1'));
  });

  it('406 when nothing is acceptable: protobuf only, other media types', () => {
    for (const target of ['object', 'list', 'watch'] as const) {
      notAcceptable('application/vnd.kubernetes.protobuf', target);
      notAcceptable('text/html', target);
      notAcceptable('application/json;q=0', target);
    }
  });

  it('JSON when protobuf comes first with JSON as an alternative', () => {
    assert.deepEqual(negotiate('application/vnd.kubernetes.protobuf,application/json', 'object'), json);
    assert.deepEqual(negotiate('application/vnd.kubernetes.protobuf, */*', 'list'), json);
  });

  it('honours q: a lower-q Table loses to plain JSON, a higher-q one wins', () => {
    assert.deepEqual(negotiate('application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json', 'list'), json);
    assert.deepEqual(negotiate('application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io', 'list'), table('v1'));
    assert.deepEqual(negotiate('application/json;q=0.1,application/yaml;q=0.2', 'object'), yaml);
  });
});
