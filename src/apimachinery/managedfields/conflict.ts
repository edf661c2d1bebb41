// Apply conflicts as a 409 Status (managedfields/internal/conflict.go): one cause per field, the
// message grouped by manager.
import { compareBytes, goQuote } from '../goCompat.js';
import { pathToString } from '../smd/pathElement.js';
import type { Conflict } from '../smd/updater.js';
import { ApiError } from '../status.js';
import { parseIdentifier } from './entries.js';

/** printManager: "name", with its subresource, and "using <apiVersion>" for an Update manager. */
export function printManager(id: string): string {
  let e: ReturnType<typeof parseIdentifier>;
  try { e = parseIdentifier(id); } catch { return goQuote(id); }
  let s = goQuote(e.manager ?? '');
  if (e.subresource) s = `${s} with subresource ${goQuote(e.subresource)}`;
  return e.operation === 'Update' ? `${s} using ${e.apiVersion ?? ''}` : s;
}

export function conflictError(conflicts: Conflict[]): ApiError {
  const causes = conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${printManager(c.manager)}`, field: pathToString(c.path) }));
  return new ApiError(409, 'Conflict', conflictMessage(conflicts), { causes });
}

function conflictMessage(conflicts: Conflict[]): string {
  if (conflicts.length === 1) return `Apply failed with 1 conflict: conflict with ${printManager(conflicts[0].manager)}: ${pathToString(conflicts[0].path)}`;
  const byManager = new Map<string, string[]>();
  for (const c of conflicts) {
    const paths = byManager.get(c.manager) ?? [];
    paths.push(pathToString(c.path));
    byManager.set(c.manager, paths);
  }
  const lines: string[] = [];
  for (const m of [...byManager.keys()].sort(compareBytes)) {
    lines.push(`conflicts with ${printManager(m)}:`);
    for (const p of byManager.get(m)!) lines.push(`- ${p}`);
  }
  return `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
}
