// Source trees a benchmark can measure: the working tree, or a commit checked out into a temporary
// git worktree (`--baseline <rev>`, `--current <rev>`). A tree's own bench/procs/farmServer.ts and
// bench/procs/heap.ts start its server and store: they import that commit's src/ layout, which moves
// between commits, while their IPC commands stay the same. Peers and clients always come from here.
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, REPO_DIR } from './common.js';

export interface Tree {
  /** "working tree" or the revision as given, e.g. "05f5995". */
  label: string;
  /** The commit, or undefined for the working tree. */
  sha?: string;
  /** Repository root: src/, dist/ and tsconfig.json live here. */
  root: string;
  benchDir: string;
}

export const WORKING_TREE: Tree = { label: 'working tree', root: REPO_DIR, benchDir: BENCH_DIR };

/** Files every tree must have for the suites that start our server. */
const NEEDED = ['bench/procs/farmServer.ts', 'bench/procs/heap.ts', 'bench/lib/common.ts', 'src/main.ts', 'tsconfig.json'];

const git = (args: string[]) => execFileSync('git', args, { cwd: REPO_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

const added: { dir: string; tmp: string }[] = [];

/**
 * Checks `rev` out into a detached worktree under a fresh temporary directory, with node_modules
 * linked from this checkout (so tsx, tsc and every dependency resolve as here).
 */
export async function addWorktree(rev: string): Promise<Tree> {
  const sha = git(['rev-parse', '--verify', `${rev}^{commit}`]);
  const tmp = await mkdtemp(join(tmpdir(), 'farm-bench-tree-'));
  const dir = join(tmp, 'repo');
  if (!added.length) {
    // Ctrl-C or a kill still removes the worktrees (the children get the signal themselves).
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => { removeWorktrees(); process.exit(130); });
  }
  added.push({ dir, tmp });
  git(['worktree', 'add', '--detach', dir, sha]);
  await symlink(join(REPO_DIR, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const missing = NEEDED.filter((f) => !existsSync(join(dir, f)));
  if (missing.length) throw new Error(`${rev} (${sha.slice(0, 10)}) has no ${missing.join(', ')}: too old for --baseline/--current`);
  return { label: rev, sha, root: dir, benchDir: join(dir, 'bench') };
}

/**
 * Removes every worktree addWorktree made (the node_modules link and any dist/ go with it).
 * Not `git worktree prune`: that would also drop other people's stale worktrees.
 */
export function removeWorktrees(): string[] {
  const problems: string[] = [];
  while (added.length) {
    const { dir, tmp } = added.pop()!;
    if (existsSync(dir)) {
      try { git(['worktree', 'remove', '--force', dir]); } catch (e) { problems.push(`git worktree remove ${dir}: ${e instanceof Error ? e.message : String(e)}`); }
    }
    rmSync(tmp, { recursive: true, force: true });
  }
  return problems;
}
