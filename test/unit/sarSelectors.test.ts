import assert from 'node:assert/strict';
import { test } from 'node:test';
import { selectorAttributes } from '../../src/server/auth/delegated.js';
import { requestInfo } from '../../src/endpoints/requestInfo.js';

const list = (q: string) => requestInfo('GET', `/apis/farm.example.com/v1alpha/namespaces/d/llamas?${q}`);

test('list selectors become SubjectAccessReview requirements (AuthorizeWithSelectors)', () => {
  const info = list(`labelSelector=${encodeURIComponent('app=farm,tier in (b,a),!gone,size>3,env!=prod')}&fieldSelector=${encodeURIComponent('metadata.name=x,status.phase!=Failed')}`);
  assert.deepEqual(selectorAttributes(info), {
    fieldSelector: { requirements: [
      { key: 'metadata.name', operator: 'In', values: ['x'] },
      { key: 'status.phase', operator: 'NotIn', values: ['Failed'] },
    ] },
    labelSelector: { requirements: [
      { key: 'app', operator: 'In', values: ['farm'] },
      { key: 'env', operator: 'NotIn', values: ['prod'] },
      { key: 'gone', operator: 'DoesNotExist' },
      { key: 'tier', operator: 'In', values: ['a', 'b'] },
    ] },
  });
});

test('no selector, an unparsable one, or a get: no selector attributes', () => {
  assert.deepEqual(selectorAttributes(list('')), {});
  assert.deepEqual(selectorAttributes(list(`labelSelector=${encodeURIComponent('a in (')}`)), {});
  assert.deepEqual(selectorAttributes(requestInfo('GET', '/apis/farm.example.com/v1alpha/namespaces/d/llamas/x?labelSelector=a%3Db')), {});
});
