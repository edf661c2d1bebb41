// The request options of meta/v1 (ListOptions, DeleteOptions) as the registry receives them, parsed.
import type { FieldValidation } from './fieldValidation.js';

export interface ListOptions {
  labelSelector: string;
  fieldSelector: string;
  watch: boolean;
  allowWatchBookmarks: boolean;
  resourceVersion: string;
  resourceVersionMatch: string;
  timeoutSeconds?: number;
  limit: number;
  continue: string;
  sendInitialEvents?: boolean;
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  orphanDependents?: boolean;
  gracePeriodSeconds?: number;
}

/** What every write carries besides its object (CreateOptions, UpdateOptions, PatchOptions). */
export interface WriteOptions {
  dryRun: boolean;
  fieldValidation: FieldValidation;
  /** The fieldManager query parameter (the manager then defaults to the User-Agent's product). */
  fieldManager?: string;
  /** force=true: an apply takes ownership of conflicting fields. */
  force?: boolean;
}
