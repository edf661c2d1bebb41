// Cluster mode's wiring: who may call us is decided by the cluster (trust ConfigMap, TokenReview,
// SubjectAccessReview), and creates respect its namespaces.
import type { FastifyBaseLogger } from 'fastify';
import { NamespaceLifecycle } from './admission/namespaceLifecycle.js';
import { clientCertAuthenticator, requestHeaderAuthenticator, subjectAccessReviewAuthorizer, tokenReviewAuthenticator, TrustSource, type AuthenticationTrust } from './auth/delegated.js';
import type { RestOptions } from '../endpoints/installer.js';
import type { AuthChain } from './auth/plugin.js';
import type { Upstream } from '../upstream/client.js';
import type { Reflector } from '../upstream/reflector.js';

export interface Delegation {
  auth: AuthChain;
  admitCreate: NonNullable<RestOptions['admitCreate']>;
  reflectors: { name: string; reflector: Reflector }[];
  /** Resolves once the trust ConfigMap has been read (serve only after that). */
  trustSynced(): Promise<void>;
}

export function delegation(upstream: Upstream, log: FastifyBaseLogger, onTrust: (t: AuthenticationTrust) => void): Delegation {
  const trust = new TrustSource(upstream, log, onTrust);
  const namespaces = new NamespaceLifecycle(upstream, log);
  const current = () => trust.current;
  return {
    auth: {
      authenticators: [requestHeaderAuthenticator(current), clientCertAuthenticator(current), tokenReviewAuthenticator(upstream)],
      authorizer: subjectAccessReviewAuthorizer(upstream),
      rejectAnonymous: false,
    },
    admitCreate: (gr, namespace, name) => namespaces.admitCreate(gr, namespace, name),
    reflectors: [
      { name: 'authentication-configmap', reflector: trust.reflector },
      { name: 'namespaces', reflector: namespaces.reflector },
    ],
    trustSynced: () => trust.reflector.waitForSync(),
  };
}
