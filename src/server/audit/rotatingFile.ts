// An append-only log file rotated by size, as gopkg.in/natefinch/lumberjack.v2 v2.2.1 does it for
// kube-apiserver's --audit-log-path (k8s.io/apiserver pkg/server/options/audit.go:496-528):
// --audit-log-maxsize megabytes (0 = lumberjack's default of 100) before the file is renamed to
// <name>-<UTC 2006-01-02T15-04-05.000><ext> and a new one opened; then backups beyond
// --audit-log-maxbackup (0 = keep all) and older than --audit-log-maxage days (0 = keep) are
// removed. Writes are synchronous, kube's default "blocking" mode: an event is in the file (page
// cache) before the request goes on, and lines never interleave.
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, renameSync, statSync, unlinkSync, writeSync, constants } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';

const MEGABYTE = 1024 * 1024;
const DEFAULT_MAX_SIZE_MB = 100;

export interface Rotation {
  /** Megabytes; 0 = 100. */
  maxSizeMB: number;
  /** Old files kept; 0 = all. */
  maxBackups: number;
  /** Days an old file is kept (by the time in its name); 0 = forever. */
  maxAgeDays: number;
}

/** 2006-01-02T15-04-05.000 in UTC. */
function backupTimestamp(d: Date): string {
  return d.toISOString().slice(0, 23).replace(/:/g, '-');
}

function parseBackupTimestamp(s: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/.exec(s);
  if (!m) return undefined;
  const t = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`);
  return Number.isNaN(t) ? undefined : t;
}

export class RotatingFile {
  private fd: number | undefined;
  private size = 0;
  private readonly max: number;

  constructor(readonly path: string, private readonly rotation: Rotation, private readonly now: () => Date = () => new Date()) {
    this.max = (rotation.maxSizeMB || DEFAULT_MAX_SIZE_MB) * MEGABYTE;
  }

  /** ensureLogFile (audit.go:518-528): the directory (0700) and the file (0600) exist and can be appended to. */
  ensure(): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    closeSync(openSync(this.path, constants.O_CREAT | constants.O_APPEND | constants.O_RDWR, 0o600));
  }

  write(text: string): void {
    const data = Buffer.from(text, 'utf8');
    if (data.length > this.max) throw new Error(`write length ${data.length} exceeds maximum file size ${this.max}`);
    if (this.fd === undefined) this.openExistingOrNew(data.length);
    else if (this.size + data.length > this.max) this.rotate();
    let off = 0;
    while (off < data.length) off += writeSync(this.fd!, data, off);
    this.size += data.length;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private openExistingOrNew(writeLen: number): void {
    this.removeOldBackups();
    let existing: number | undefined;
    try { existing = statSync(this.path).size; } catch { existing = undefined; }
    if (existing === undefined) return this.openNew();
    if (existing + writeLen >= this.max) return this.rotate();
    try {
      this.fd = openSync(this.path, constants.O_APPEND | constants.O_WRONLY);
      this.size = fstatSync(this.fd).size;
    } catch {
      this.openNew();
    }
  }

  private rotate(): void {
    this.close();
    this.openNew();
    this.removeOldBackups();
  }

  private openNew(): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o755 });
    let mode = 0o600;
    try {
      mode = statSync(this.path).mode & 0o777;
      renameSync(this.path, this.backupName());
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    this.fd = openSync(this.path, constants.O_CREAT | constants.O_WRONLY | constants.O_TRUNC, mode);
    this.size = 0;
  }

  private prefixAndExt(): { prefix: string; ext: string } {
    const name = basename(this.path);
    const ext = extname(name);
    return { prefix: `${name.slice(0, name.length - ext.length)}-`, ext };
  }

  private backupName(): string {
    const { prefix, ext } = this.prefixAndExt();
    return join(dirname(this.path), `${prefix}${backupTimestamp(this.now())}${ext}`);
  }

  /** The backups of this file, newest first (lumberjack's oldLogFiles). */
  backups(): { name: string; time: number }[] {
    const { prefix, ext } = this.prefixAndExt();
    const out: { name: string; time: number }[] = [];
    for (const e of readdirSync(dirname(this.path), { withFileTypes: true })) {
      if (e.isDirectory() || !e.name.startsWith(prefix) || !e.name.endsWith(ext) || e.name.length < prefix.length + ext.length) continue;
      const time = parseBackupTimestamp(e.name.slice(prefix.length, e.name.length - ext.length));
      if (time !== undefined) out.push({ name: e.name, time });
    }
    return out.sort((a, b) => b.time - a.time);
  }

  /** millRunOnce without compression: beyond maxBackups, then older than maxAge. */
  private removeOldBackups(): void {
    const { maxBackups, maxAgeDays } = this.rotation;
    if (maxBackups === 0 && maxAgeDays === 0) return;
    let files = this.backups();
    const remove: string[] = [];
    if (maxBackups > 0 && files.length > maxBackups) {
      remove.push(...files.slice(maxBackups).map((f) => f.name));
      files = files.slice(0, maxBackups);
    }
    if (maxAgeDays > 0) {
      const cutoff = this.now().getTime() - maxAgeDays * 24 * 3600 * 1000;
      for (const f of files) if (f.time < cutoff) remove.push(f.name);
    }
    for (const name of remove) {
      try { unlinkSync(join(dirname(this.path), name)); } catch { /* gone already: what we wanted */ }
    }
  }
}
