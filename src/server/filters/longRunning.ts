// Which requests are "long-running": kube's LongRunningFunc for a generic API server,
// BasicLongRunningRequestCheck(sets.NewString("watch"), sets.NewString()) (k8s.io/apiserver
// pkg/server/config.go:469, pkg/server/filters/longrunning.go:28). Audit (ResponseStarted) and the
// in-flight limit (exempt) both ask it.
import type { RequestInfo } from '../../apimachinery/types.js';

export function isLongRunning(info: RequestInfo): boolean {
  if (info.verb === 'watch') return true;
  return !info.isResourceRequest && info.path.startsWith('/debug/pprof/');
}
