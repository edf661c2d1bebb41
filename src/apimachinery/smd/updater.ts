// merge/update.go: how an update or an apply changes who owns which fields. Managers are keyed by their
// identifier; one API version is served, so no conversion between versions is needed. Each whole-object
// walk is one stage: the Pacer lets other requests run between stages of a big object's write.
import type { Pacer } from '../pacer.js';
import { FieldSet } from './fieldSet.js';
import type { Path } from './pathElement.js';
import type { Atom } from './schema.js';
import { compare, compareWalk, mergeWalk, removeItemsWalk, toFieldSet, toFieldSetWalk, type Comparison } from './typed.js';
import { pauseAt, runNow, runPaced, type Walk } from './walk.js';
import { valueEquals, type Json } from './value.js';

export interface VersionedSet { set: FieldSet; apiVersion: string; applied: boolean }
export type ManagedFields = Map<string, VersionedSet>;

export interface Conflict { manager: string; path: Path }

export class Conflicts extends Error {
  constructor(readonly conflicts: Conflict[]) { super('conflicts'); }
}

/** conflictsFromManagers: per manager (in the map's order), its conflicting paths in set order. */
function conflictsOf(sets: ManagedFields): Conflict[] {
  const out: Conflict[] = [];
  for (const [manager, vs] of sets) for (const path of vs.set.paths()) out.push({ manager, path });
  return out;
}

export class Updater {
  /** Fields the strategy resets (status on the main resource, spec on /status): never owned, never conflicting. */
  constructor(private readonly atom: Atom, private readonly ignored: FieldSet = new FieldSet()) {}

  private filter(set: FieldSet): FieldSet {
    return this.ignored.empty() ? set : set.recursiveDifference(this.ignored);
  }

  private async compare(lhs: Json, rhs: Json, pace: Pacer): Promise<Comparison> {
    const c = await runPaced(compareWalk(lhs, rhs, this.atom), pace);
    return { added: this.filter(c.added), modified: this.filter(c.modified), removed: this.filter(c.removed) };
  }

  /** Other managers lose what this write changed; without force, changing another's field is a conflict. */
  private async update(oldObject: Json, newObject: Json, managers: ManagedFields, workflow: string, force: boolean, pace: Pacer): Promise<{ managers: ManagedFields; comparison: Comparison }> {
    const comparison = await this.compare(oldObject, newObject, pace);
    const changed = comparison.modified.union(comparison.added);
    const conflicts: ManagedFields = new Map();
    for (const [manager, vs] of managers) {
      if (manager === workflow) continue;
      const conflictSet = vs.set.intersection(changed);
      if (!conflictSet.empty()) conflicts.set(manager, { ...vs, set: conflictSet });
    }
    if (!force && conflicts.size) throw new Conflicts(conflictsOf(conflicts));
    const out: ManagedFields = new Map();
    for (const [manager, vs] of managers) {
      let set = vs.set;
      if (manager !== workflow) {
        const lost = conflicts.get(manager);
        if (lost) set = set.difference(lost.set);
        if (!comparison.removed.empty()) set = set.difference(comparison.removed);
      }
      if (!set.empty()) out.set(manager, { ...vs, set });
    }
    return { managers: out, comparison };
  }

  /** An update owns what it added or modified, keeps what it owned and still exists. */
  async updateManaged(liveObject: Json, newObject: Json, apiVersion: string, managers: ManagedFields, manager: string, pace: Pacer): Promise<ManagedFields> {
    const { managers: out, comparison } = await this.update(liveObject, newObject, managers, manager, true, pace);
    const previous = out.get(manager)?.set ?? new FieldSet();
    const set = this.filter(previous.difference(comparison.removed).union(comparison.modified).union(comparison.added));
    if (set.empty()) out.delete(manager);
    else out.set(manager, { set, apiVersion, applied: false });
    return out;
  }

  /**
   * Merges the configuration into the live object; the applier owns exactly what it applied, fields it
   * stopped applying are removed unless someone else owns them. `object` is undefined for a no-op.
   */
  async apply(liveObject: Json, config: Json, apiVersion: string, managers: ManagedFields, manager: string, force: boolean, pace: Pacer): Promise<{ object?: Json; managers: ManagedFields }> {
    let newObject = (await runPaced(mergeWalk(liveObject, config, this.atom), pace)) ?? null;
    const lastSet = managers.get(manager);
    const next: ManagedFields = new Map(managers);
    next.set(manager, { set: this.filter(await runPaced(toFieldSetWalk(config, this.atom), pace)), apiVersion, applied: true });
    newObject = await this.prune(newObject, next, lastSet, pace);
    const { managers: out } = await this.update(liveObject, newObject, next, manager, force, pace);
    return { object: valueEquals(liveObject, newObject) ? undefined : newObject, managers: out };
  }

  /** The fields of `last` that `live` still has with the same values (lastAppliedManager). */
  unchangedSince(last: Json, live: Json): FieldSet {
    const c = compare(last, live, this.atom);
    return toFieldSet(last, this.atom).difference(c.modified).difference(c.added).difference(c.removed);
  }

  private async prune(merged: Json, managers: ManagedFields, lastSet: VersionedSet | undefined, pace: Pacer): Promise<Json> {
    if (!lastSet || lastSet.set.empty()) return merged;
    const walk = <T>(w: Walk<T>) => runPaced(w, pace);
    const named = (set: FieldSet) => walk(ensureNamedWalk(set, this.atom));
    const fieldsOf = async (v: Json) => named(await walk(toFieldSetWalk(v, this.atom)));
    const lastApplied = await named(lastSet.set);
    let pruned = await walk(removeItemsWalk(merged, lastApplied, this.atom));
    // addBackOwnedItems: whatever any manager owns stays.
    let managed = new FieldSet();
    for (const vs of managers.values()) managed = managed.union(vs.set);
    const mergedSet = await fieldsOf(merged);
    let prunedSet = await fieldsOf(pruned);
    pruned = await walk(removeItemsWalk(merged, mergedSet.difference(prunedSet.union(await named(managed))), this.atom));
    // addBackDanglingItems: only fields the applier had applied may go.
    prunedSet = await fieldsOf(pruned);
    await pace.breathe();
    return walk(removeItemsWalk(merged, mergedSet.difference(prunedSet).intersection(lastApplied), this.atom));
  }
}

/** EnsureNamedFieldsAreMembers: a struct field with owned fields below it is itself a member. */
export function ensureNamedFieldsAreMembers(set: FieldSet, atom: Atom | undefined): FieldSet {
  return runNow(ensureNamedWalk(set, atom));
}

function* ensureNamedWalk(set: FieldSet, atom: Atom | undefined): Walk<FieldSet> {
  const out = new FieldSet();
  let n = 0;
  for (const [k, pe] of set.members) {
    out.members.set(k, pe);
    if (pauseAt(++n)) yield;
  }
  for (const [k, c] of set.children) {
    let childAtom: Atom | undefined;
    if ('field' in c.pe && atom?.map) {
      if (atom.map.fields.has(c.pe.field)) out.members.set(k, c.pe);
      childAtom = atom.map.fields.get(c.pe.field) ?? atom.map.elementType;
    } else if ('key' in c.pe && atom?.list) {
      childAtom = atom.list.elementType;
    }
    out.children.set(k, { pe: c.pe, set: yield* ensureNamedWalk(c.set, childAtom) });
    if (pauseAt(++n)) yield;
  }
  return out;
}
