// The audit log file: rotation with lumberjack's semantics (size, backups, age, names), and the
// Event line format (microsecond timestamps, Go field order, objects spliced in).
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RotatingFile } from '../../src/server/audit/rotatingFile.js';
import { microTime } from '../../src/server/audit/eventParts.js';
import { eventLine, type AuditEvent } from '../../src/server/audit/types.js';

const MB = 1024 * 1024;

describe('audit log rotation (lumberjack v2.2.1 semantics)', () => {
  let dir: string;
  before(async () => { dir = await mkdtemp(join(tmpdir(), 'farm-audit-rot-')); });
  after(async () => { await rm(dir, { recursive: true, force: true }); });

  it('rotates when a write would pass maxsize, names backups <name>-<UTC time><ext>, keeps maxbackup', async () => {
    const path = join(dir, 'a', 'audit.log');
    let clock = Date.parse('2025-01-02T03:04:05.006Z');
    const f = new RotatingFile(path, { maxSizeMB: 1, maxBackups: 2, maxAgeDays: 0 }, () => new Date(clock));
    f.ensure();
    const line = `${'x'.repeat(100 * 1024 - 1)}\n`; // 100 KiB: 10 fit in 1 MiB, the 11th rotates
    for (let i = 0; i < 10; i++) f.write(line);
    assert.deepEqual((await readdir(join(dir, 'a'))).sort(), ['audit.log']);
    f.write(line);
    assert.deepEqual((await readdir(join(dir, 'a'))).sort(), ['audit-2025-01-02T03-04-05.006.log', 'audit.log']);
    assert.equal((await readFile(join(dir, 'a', 'audit-2025-01-02T03-04-05.006.log'))).length, 10 * 100 * 1024);
    for (let r = 1; r <= 3; r++) {
      clock += 1000;
      for (let i = 0; i < 10; i++) f.write(line);
    }
    f.close();
    const names = (await readdir(join(dir, 'a'))).sort();
    assert.deepEqual(names, ['audit-2025-01-02T03-04-07.006.log', 'audit-2025-01-02T03-04-08.006.log', 'audit.log']);
    assert.throws(() => f.write('y'.repeat(MB + 1)), /write length 1048577 exceeds maximum file size 1048576/);
  });

  it('appends to an existing file across restarts, rotating it first if the write would not fit', async () => {
    const path = join(dir, 'b.log');
    await writeFile(path, 'z'.repeat(MB - 10));
    const f = new RotatingFile(path, { maxSizeMB: 1, maxBackups: 0, maxAgeDays: 0 }, () => new Date('2025-01-01T00:00:00Z'));
    f.write('12345\n');
    f.write('abcdefghij\n');
    f.close();
    assert.equal(await readFile(join(dir, 'b.log'), 'utf8'), 'abcdefghij\n');
    assert.equal((await readFile(join(dir, 'b-2025-01-01T00-00-00.000.log'), 'utf8')).length, MB - 10 + 6);
  });

  it('maxage removes backups older than that many days, by the time in their names', async () => {
    const sub = join(dir, 'age');
    const path = join(sub, 'audit');
    const now = Date.parse('2025-03-10T00:00:00Z');
    const f = new RotatingFile(path, { maxSizeMB: 1, maxBackups: 0, maxAgeDays: 2 }, () => new Date(now));
    f.ensure();
    await writeFile(join(sub, 'audit-2025-03-01T00-00-00.000'), 'old');
    await writeFile(join(sub, 'audit-2025-03-09T00-00-00.000'), 'recent');
    await writeFile(join(sub, 'audit-not-a-time'), 'other');
    f.write('x\n'); // the first open mills, as lumberjack's openExistingOrNew does
    f.close();
    assert.deepEqual((await readdir(sub)).sort(), ['audit', 'audit-2025-03-09T00-00-00.000', 'audit-not-a-time']);
  });
});

describe('audit event lines', () => {
  it('MicroTime: RFC3339, six fractional digits, UTC', () => {
    assert.equal(microTime(Date.parse('2025-06-07T08:09:10.123Z') * 1000 + 456), '2025-06-07T08:09:10.123456Z');
    assert.equal(microTime(Date.parse('2025-06-07T08:09:10Z') * 1000 + 7), '2025-06-07T08:09:10.000007Z');
  });
  it('one line in the Go struct order, objects embedded as JSON', () => {
    const ev: AuditEvent = {
      kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'Request', auditID: 'id', stage: 'ResponseComplete', requestURI: '/x', verb: 'create',
      user: { username: 'u' }, annotations: { a: 'b' }, stageTimestamp: 't2', requestReceivedTimestamp: 't1',
      requestObject: { json: '{"k":1}' }, responseStatus: { metadata: {}, code: 201 },
    };
    const line = eventLine(ev);
    assert.ok(line.endsWith('}\n') && !line.slice(0, -1).includes('\n'));
    assert.deepEqual(Object.keys(JSON.parse(line)), ['kind', 'apiVersion', 'level', 'auditID', 'stage', 'requestURI', 'verb', 'user',
      'responseStatus', 'requestObject', 'requestReceivedTimestamp', 'stageTimestamp', 'annotations']);
    assert.deepEqual(JSON.parse(line).requestObject, { k: 1 });
  });
});
