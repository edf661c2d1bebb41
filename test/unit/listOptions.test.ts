// ListOptions and Create/Update/Patch/DeleteOptions from the query string, with the Status messages of
// k8s.io/apimachinery's internalversion/validation (ValidateListOptions) and meta/v1/validation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseListOptions, parseWriteOptions, type Query } from '../../src/endpoints/listOptions.js';
import { parseRV } from '../../src/apimachinery/resourceVersion.js';
import { ApiError } from '../../src/apimachinery/status.js';

/** The ApiError a call throws, checked to be a Status-shaped refusal with the given code. */
function refusal(fn: () => unknown, code: number, reason: string): ApiError {
  let caught: unknown;
  try { fn(); } catch (e) { caught = e; }
  assert.ok(caught instanceof ApiError, `expected an ApiError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  assert.equal(caught.reason, reason);
  return caught;
}

const invalidList = (q: Query, forceWatch = false) => refusal(() => parseListOptions(q, forceWatch), 422, 'Invalid');

describe('parseListOptions', () => {
  it('defaults', () => {
    assert.deepEqual(parseListOptions({}), {
      labelSelector: '', fieldSelector: '', watch: false, allowWatchBookmarks: false, resourceVersion: '', resourceVersionMatch: '',
      timeoutSeconds: undefined, limit: 0, continue: '', sendInitialEvents: undefined,
    });
  });

  it('reads every parameter; the first of repeated values wins; the watch path forces watch', () => {
    const o = parseListOptions({
      labelSelector: ['app=farm', 'ignored'], fieldSelector: 'metadata.name=x', watch: 'true', allowWatchBookmarks: '1',
      resourceVersion: '12', timeoutSeconds: '30', limit: '500', timeout: '32s',
    });
    assert.equal(o.labelSelector, 'app=farm');
    assert.equal(o.fieldSelector, 'metadata.name=x');
    assert.equal(o.watch, true);
    assert.equal(o.allowWatchBookmarks, true);
    assert.equal(o.resourceVersion, '12');
    assert.equal(o.timeoutSeconds, 30);
    assert.equal(o.limit, 500);
    assert.equal(parseListOptions({ watch: '1' }).watch, true);
    assert.equal(parseListOptions({ watch: 'false' }).watch, false);
    assert.equal(parseListOptions({ watch: '0' }).watch, false);
    assert.equal(parseListOptions({}, true).watch, true);
  });

  it('a negative limit means no limit', () => {
    assert.equal(parseListOptions({ limit: '-5' }).limit, 0);
  });

  it('400 for an integer that does not parse (an empty one too); booleans never fail, as kube converts them', () => {
    refusal(() => parseListOptions({ limit: '10x' }), 400, 'BadRequest');
    refusal(() => parseListOptions({ limit: '' }), 400, 'BadRequest');
    refusal(() => parseListOptions({ timeoutSeconds: '1.5' }), 400, 'BadRequest');
    refusal(() => parseListOptions({ limit: '9223372036854775808' }), 400, 'BadRequest');
    // Convert_Slice_string_To_bool: "0" and "false" in any case are false, anything else true.
    for (const v of ['yes', '', 'TRUE', '00', 'maybe']) assert.equal(parseListOptions({ watch: v }).watch, true, v);
    for (const v of ['0', 'false', 'FALSE', 'False']) assert.equal(parseListOptions({ watch: v }).watch, false, v);
  });

  describe('list validation (ValidateListOptions)', () => {
    it('resourceVersionMatch requires resourceVersion', () => {
      const e = invalidList({ resourceVersionMatch: 'NotOlderThan' });
      assert.equal(e.message, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided');
      assert.equal(e.details?.kind, 'ListOptions');
      assert.equal(e.details?.group, 'meta.k8s.io');
      assert.deepEqual(e.details?.causes, [{ reason: 'FieldValueForbidden', message: 'Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided', field: 'resourceVersionMatch' }]);
    });

    it('resourceVersionMatch is forbidden with continue', () => {
      assert.equal(invalidList({ resourceVersion: '5', resourceVersionMatch: 'Exact', continue: 'tok' }).message,
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided');
    });

    it('an unknown resourceVersionMatch lists the supported values, the empty one included', () => {
      assert.equal(invalidList({ resourceVersion: '5', resourceVersionMatch: 'Newest' }).message,
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""');
    });

    it('Exact is forbidden for resourceVersion "0"', () => {
      assert.equal(invalidList({ resourceVersion: '0', resourceVersionMatch: 'Exact' }).message,
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
    });

    it('sendInitialEvents is forbidden for list', () => {
      assert.equal(invalidList({ sendInitialEvents: 'true' }).message,
        'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list');
    });

    it('several errors are reported together, in brackets', () => {
      const e = invalidList({ resourceVersionMatch: 'Newest', sendInitialEvents: 'false' });
      assert.equal(e.message, 'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, '
        + 'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", "", sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list]');
      assert.equal(e.details?.causes?.length, 3);
    });

    it('accepts the valid combinations', () => {
      assert.equal(parseListOptions({ resourceVersion: '5', resourceVersionMatch: 'Exact' }).resourceVersionMatch, 'Exact');
      assert.equal(parseListOptions({ resourceVersion: '0', resourceVersionMatch: 'NotOlderThan' }).resourceVersionMatch, 'NotOlderThan');
      assert.equal(parseListOptions({ limit: '10', continue: 'tok' }).continue, 'tok');
    });
  });

  describe('watch validation (validateWatchOptions)', () => {
    it('sendInitialEvents requires resourceVersionMatch=NotOlderThan', () => {
      assert.equal(invalidList({ watch: 'true', sendInitialEvents: 'true', allowWatchBookmarks: 'true' }).message,
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan');
    });

    it('sendInitialEvents requires allowWatchBookmarks', () => {
      assert.equal(invalidList({ watch: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan' }).message,
        'ListOptions.meta.k8s.io "" is invalid: allowWatchBookmarks: Forbidden: allowWatchBookmarks must be set to true when sendInitialEvents is provided');
    });

    it('resourceVersionMatch on a watch requires sendInitialEvents, and only NotOlderThan is supported', () => {
      assert.equal(invalidList({ resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: 'true' }, true).message,
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided');
      const e = invalidList({ watch: '1', sendInitialEvents: 'true', resourceVersionMatch: 'Exact', allowWatchBookmarks: 'true' });
      assert.equal(e.message, 'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, '
        + 'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]');
    });

    it('the list-only rules do not apply to watches, and the watch rules pass for a proper watch-list request', () => {
      assert.equal(parseListOptions({ watch: 'true', resourceVersion: '0' }).watch, true);
      const o = parseListOptions({ watch: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: 'true' });
      assert.equal(o.sendInitialEvents, true);
      assert.equal(parseListOptions({ watch: 'true', sendInitialEvents: 'false', resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: 'true' }).sendInitialEvents, false);
    });
  });
});

describe('parseRV', () => {
  it('"" is unset, digits are a number, anything else is 400', () => {
    assert.equal(parseRV(''), undefined);
    assert.equal(parseRV('0'), 0);
    assert.equal(parseRV('12345'), 12345);
    for (const bad of ['-1', 'abc', '1.5', ' 1']) refusal(() => parseRV(bad), 400, 'BadRequest');
  });
});

describe('parseWriteOptions', () => {
  it('defaults: not a dry run, fieldValidation Warn (as the handlers default an absent directive)', () => {
    assert.deepEqual(parseWriteOptions({}, 'CreateOptions'), { dryRun: false, fieldValidation: 'Warn', fieldManager: undefined, force: false });
  });

  it('PatchOptions in ValidatePatchOptions\' order: apply needs fieldManager, force only for apply, printable managers', () => {
    assert.equal(refusal(() => parseWriteOptions({ force: 'true', dryRun: 'x' }, 'PatchOptions'), 422, 'Invalid').message,
      'PatchOptions.meta.k8s.io "" is invalid: [force: Forbidden: may not be specified for non-apply patch, dryRun: Unsupported value: []string{"x"}: supported values: "All"]');
    assert.equal(refusal(() => parseWriteOptions({}, 'PatchOptions', { apply: true }), 422, 'Invalid').message,
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
    assert.equal(parseWriteOptions({ fieldManager: 'a', force: 'true' }, 'PatchOptions', { apply: true }).force, true);
    assert.equal(refusal(() => parseWriteOptions({ fieldManager: 'a\u0000b' }, 'UpdateOptions'), 422, 'Invalid').message,
      'UpdateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\x00b": invalid character U+0000 (at position 1)');
    refusal(() => parseWriteOptions({ fieldManager: 'a', force: 'yes' }, 'PatchOptions', { apply: true }), 400, 'BadRequest');
  });

  it('dryRun=All (repeatable), the three fieldValidation directives, fieldManager', () => {
    assert.equal(parseWriteOptions({ dryRun: 'All' }, 'UpdateOptions').dryRun, true);
    assert.equal(parseWriteOptions({ dryRun: ['All', 'All'] }, 'PatchOptions').dryRun, true);
    for (const fv of ['Strict', 'Warn', 'Ignore'] as const) assert.equal(parseWriteOptions({ fieldValidation: fv }, 'CreateOptions').fieldValidation, fv);
    assert.equal(parseWriteOptions({ fieldManager: 'kubectl-create' }, 'CreateOptions').fieldManager, 'kubectl-create');
  });

  it('422 for dryRun other than All, naming the options kind and printing the values as Go does', () => {
    for (const kind of ['CreateOptions', 'UpdateOptions', 'PatchOptions', 'DeleteOptions'] as const) {
      const e = refusal(() => parseWriteOptions({ dryRun: 'foo' }, kind), 422, 'Invalid');
      assert.equal(e.message, `${kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"foo"}: supported values: "All"`);
      assert.equal(e.details?.kind, kind);
      assert.equal(e.details?.group, 'meta.k8s.io');
    }
    assert.equal(refusal(() => parseWriteOptions({ dryRun: ['All', 'Some'] }, 'CreateOptions'), 422, 'Invalid').message,
      'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"All", "Some"}: supported values: "All"');
    refusal(() => parseWriteOptions({ dryRun: '' }, 'CreateOptions'), 422, 'Invalid');
  });

  it('422 for an unknown fieldValidation, listing the allowed values sorted with the empty one', () => {
    assert.equal(refusal(() => parseWriteOptions({ fieldValidation: 'strict' }, 'PatchOptions'), 422, 'Invalid').message,
      'PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"');
  });

  it('422 for a fieldManager over 128 characters, without echoing the value', () => {
    const long = 'm'.repeat(129);
    const e = refusal(() => parseWriteOptions({ fieldManager: long }, 'CreateOptions'), 422, 'Invalid');
    assert.match(e.message, /^CreateOptions\.meta\.k8s\.io "" is invalid: fieldManager: Too long: /);
    assert.ok(!e.message.includes(long), 'TooLong errors omit the value');
    assert.equal(e.details?.causes?.[0].reason, 'FieldValueTooLong');
    assert.doesNotThrow(() => parseWriteOptions({ fieldManager: 'm'.repeat(128) }, 'CreateOptions'));
  });

  it('reports every problem at once', () => {
    const e = refusal(() => parseWriteOptions({ dryRun: 'x', fieldValidation: 'y' }, 'UpdateOptions'), 422, 'Invalid');
    assert.equal(e.details?.causes?.length, 2);
    assert.match(e.message, /^UpdateOptions\.meta\.k8s\.io "" is invalid: \[dryRun: .*, fieldValidation: .*\]$/);
  });
});
