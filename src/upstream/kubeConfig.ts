// The one part of client-node the server uses, in a module of its own so the bundle's chunk for it
// keeps only what KubeConfig needs: a dynamic import of the package itself keeps every generated
// API and model (~14 MB of JavaScript to compile at each cluster-mode start, against ~1.5 MB).
export { KubeConfig } from '@kubernetes/client-node';
