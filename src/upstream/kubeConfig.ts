// The one part of client-node the server uses, from its own module: the package's index imports every
// generated API and model (~14 MB of JavaScript), which the bundle's lazy CommonJS wrapper for this
// module would keep, parse at every start and run at each cluster-mode start (~1.5 MB without them).
export { KubeConfig } from '@kubernetes/client-node/dist/config.js';
