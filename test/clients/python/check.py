"""Drives farm-apiserver with the official `kubernetes` Python client (CustomObjectsApi, Watch and
DynamicClient discovery) and prints one JSON line per step; exits 1 when any step failed, 2 on bad usage.

    .cache/pyclients/bin/python test/clients/python/check.py KUBECONFIG NAMESPACE
"""
import argparse
import json
import os
import queue
import sys
import tempfile
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

GROUP, VERSION, PLURAL, KIND = 'farm.example.com', 'v1alpha', 'llamas', 'Llama'
API_VERSION = f'{GROUP}/{VERSION}'
EVENT_TIMEOUT_S = 10


class StepFailed(Exception):
    pass


class Recorder:
    """Records method, path, Content-Type and status of every request the client makes (watch
    streams included), so a step's failure shows what went over the wire."""

    def __init__(self, rest_client):
        self.calls = []
        inner = rest_client.request

        def request(method, url, headers=None, *args, **kwargs):
            call = {'method': method, 'url': url.split('//', 1)[-1].split('/', 1)[-1],
                    'contentType': (headers or {}).get('Content-Type')}
            self.calls.append(call)
            try:
                response = inner(method, url, headers, *args, **kwargs)
            except ApiException as e:
                call['status'] = e.status
                raise
            call['status'] = response.status
            return response

        rest_client.request = request

    def mark(self):
        return len(self.calls)

    def since(self, mark):
        return [dict(c) for c in self.calls[mark:]]


class Scenario:
    def __init__(self, api_client, namespace):
        self.api_client = api_client
        self.api = client.CustomObjectsApi(api_client)
        self.rec = Recorder(api_client.rest_client)
        self.ns = namespace
        self.name = f'python-{time.time_ns() % 1_000_000_000}'
        self.list_rv = None
        self.current = None  # the object as the last successful write returned it
        self.stale = None
        self.events = queue.Queue()
        self.watcher = None

    def steps(self):
        return [
            ('list', self.list),
            ('watch', self.start_watch),
            ('create', self.create),
            ('watch-added', lambda: self.expect_event('ADDED')),
            ('get', self.get),
            ('replace', self.replace),
            ('watch-modified', lambda: self.expect_event('MODIFIED')),
            ('replace-stale-conflict', self.replace_stale),
            ('list-contains', self.list_contains),
            ('delete', self.delete),
            ('watch-deleted', lambda: self.expect_event('DELETED')),
            ('get-after-delete', self.get_after_delete),
            ('dynamic-discovery', self.dynamic_discovery),
        ]

    def need_object(self):
        if self.current is None:
            raise StepFailed('no object to work on (the create step failed)')

    def list(self):
        got = self.api.list_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL)
        if got.get('kind') != f'{KIND}List' or got.get('apiVersion') != API_VERSION:
            raise StepFailed(f"list is {got.get('apiVersion')} {got.get('kind')}, want {API_VERSION} {KIND}List")
        self.list_rv = got['metadata'].get('resourceVersion')
        if not self.list_rv:
            raise StepFailed('list has no metadata.resourceVersion')
        return {'resourceVersion': self.list_rv, 'items': len(got['items'])}

    def start_watch(self):
        if not self.list_rv:
            raise StepFailed('no resourceVersion to watch from (the list step failed)')
        self.watcher = watch.Watch()
        stream = self.watcher.stream(self.api.list_namespaced_custom_object, GROUP, VERSION, self.ns, PLURAL,
                                     resource_version=self.list_rv, allow_watch_bookmarks=True, timeout_seconds=120)

        def pump():
            try:
                for event in stream:
                    self.events.put(('event', event))
            except Exception as e:  # reported by the step waiting for the next event
                self.events.put(('exception', e))
            self.events.put(('closed', None))

        threading.Thread(target=pump, daemon=True).start()
        return {'fromResourceVersion': self.list_rv}

    def expect_event(self, want):
        """The next event about our Llama (BOOKMARKs skipped) must be `want`, carrying the
        resourceVersion of the write that caused it (DELETED: a newer one)."""
        if self.watcher is None:
            raise StepFailed('no watch open (the watch step failed)')
        self.need_object()
        deadline = time.monotonic() + EVENT_TIMEOUT_S
        while True:
            try:
                kind, value = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise StepFailed(f'no {want} event within {EVENT_TIMEOUT_S}s') from None
            if kind == 'exception':
                raise value
            if kind == 'closed':
                raise StepFailed(f'watch closed before the {want} event')
            obj = value['raw_object']
            if value['type'] == 'BOOKMARK' or obj.get('metadata', {}).get('name') != self.name:
                continue
            rv = obj['metadata'].get('resourceVersion')
            if value['type'] != want:
                raise StepFailed(f"got a {value['type']} event (resourceVersion {rv}), want {want}")
            if obj['metadata'].get('uid') != self.current['metadata']['uid']:
                raise StepFailed(f"{want} event for uid {obj['metadata'].get('uid')}, want {self.current['metadata']['uid']}")
            last = self.current['metadata']['resourceVersion']
            if want == 'DELETED':
                if not rv or rv == last:
                    raise StepFailed(f"DELETED event has resourceVersion {rv!r}, want the deletion's (newer than {last})")
            elif rv != last:
                raise StepFailed(f'{want} event has resourceVersion {rv}, the write returned {last}')
            return {'type': want, 'resourceVersion': rv}

    def create(self):
        body = {'apiVersion': API_VERSION, 'kind': KIND,
                'metadata': {'name': self.name, 'labels': {'client': 'python'}},
                'spec': {'weight': 120, 'height': 1.7, 'color': 'brown'}}
        mark = self.rec.mark()
        # (data, status, headers), as the client's *_with_http_info methods have always returned
        got, status, _ = self.api.create_namespaced_custom_object_with_http_info(GROUP, VERSION, self.ns, PLURAL, body)
        posts = [c for c in self.rec.since(mark) if c['method'] == 'POST']
        if status != 201:
            raise StepFailed(f'POST answered {status}, want 201 Created')
        meta = got.get('metadata', {})
        if meta.get('name') != self.name or meta.get('namespace') != self.ns or not meta.get('uid') \
                or not meta.get('resourceVersion') or not meta.get('creationTimestamp'):
            raise StepFailed(f'created object metadata incomplete: {meta}')
        if got['spec'].get('color') != 'brown' or got['spec'].get('shorn') is not False:
            raise StepFailed(f"created spec is {got['spec']}, want color brown and the default shorn=false")
        self.current = got
        # What this step exists for: the client sends its JSON body with no Content-Type at all.
        return {'name': self.name, 'uid': meta['uid'], 'resourceVersion': meta['resourceVersion'],
                'requestContentType': posts[-1]['contentType'] if posts else None}

    def get(self):
        self.need_object()
        got = self.api.get_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, self.name)
        want = self.current['metadata']
        if got['metadata'].get('uid') != want['uid'] or got['metadata'].get('resourceVersion') != want['resourceVersion']:
            raise StepFailed(f"get returned {got['metadata']}, created uid {want['uid']} rv {want['resourceVersion']}")
        return {'resourceVersion': got['metadata']['resourceVersion']}

    def replace(self):
        self.need_object()
        body = json.loads(json.dumps(self.current))
        body['spec']['color'] = 'black'
        mark = self.rec.mark()
        got, status, _ = self.api.replace_namespaced_custom_object_with_http_info(GROUP, VERSION, self.ns, PLURAL, self.name, body)
        puts = [c for c in self.rec.since(mark) if c['method'] == 'PUT']
        if status != 200:
            raise StepFailed(f'PUT answered {status}, want 200')
        old = self.current['metadata']
        meta = got['metadata']
        if got['spec'].get('color') != 'black':
            raise StepFailed(f"replaced spec is {got['spec']}, want color black")
        if meta.get('uid') != old['uid']:
            raise StepFailed(f"uid changed on replace: {old['uid']} -> {meta.get('uid')}")
        if not meta.get('resourceVersion') or meta['resourceVersion'] == old['resourceVersion']:
            raise StepFailed(f"resourceVersion {meta.get('resourceVersion')!r} after replace, was {old['resourceVersion']}")
        if meta.get('generation') != old.get('generation', 0) + 1:
            raise StepFailed(f"generation {meta.get('generation')} after a spec change, was {old.get('generation')}")
        self.stale, self.current = self.current, got
        return {'resourceVersion': meta['resourceVersion'], 'generation': meta['generation'],
                'requestContentType': puts[-1]['contentType'] if puts else None}

    def replace_stale(self):
        if self.stale is None:
            raise StepFailed('no stale object (the replace step failed)')
        body = json.loads(json.dumps(self.stale))
        body['spec']['color'] = 'grey'
        try:
            self.api.replace_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, self.name, body)
        except ApiException as e:
            if e.status != 409:
                raise
            return {'status': 409}
        raise StepFailed(f"a replace with the stale resourceVersion {self.stale['metadata']['resourceVersion']} was accepted")

    def list_contains(self):
        self.need_object()
        got = self.api.list_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL)
        for item in got['items']:
            if item['metadata']['name'] == self.name:
                if item['metadata']['resourceVersion'] != self.current['metadata']['resourceVersion']:
                    raise StepFailed(f"listed at resourceVersion {item['metadata']['resourceVersion']}, want {self.current['metadata']['resourceVersion']}")
                return {'resourceVersion': got['metadata'].get('resourceVersion'), 'items': len(got['items'])}
        raise StepFailed(f"{self.name} missing from the {len(got['items'])} listed items")

    def delete(self):
        self.need_object()
        uid = self.current['metadata']['uid']
        got = self.api.delete_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, self.name,
                                                       body={'preconditions': {'uid': uid}})
        return {'uid': uid, 'responseKind': got.get('kind')}

    def get_after_delete(self):
        self.need_object()
        try:
            self.api.get_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, self.name)
        except ApiException as e:
            if e.status != 404:
                raise
            return {'status': 404}
        raise StepFailed(f'{self.name} still exists after delete')

    def dynamic_discovery(self):
        """DynamicClient discovery: /version, /apis, then (for a search over everything) /api/v1 and
        every group version, as `kubernetes.dynamic` users do before their first call."""
        mark = self.rec.mark()
        with tempfile.TemporaryDirectory() as d:
            dyn = DynamicClient(self.api_client, cache_file=os.path.join(d, 'discovery.json'))
            res = dyn.resources.get(api_version=API_VERSION, kind=KIND)
            if res.name != PLURAL or not res.namespaced:
                raise StepFailed(f'discovered {res.name} namespaced={res.namespaced}, want {PLURAL} namespaced')
            everything = dyn.resources.search()
            if not any(r.group_version == API_VERSION and r.name == PLURAL for r in everything):
                raise StepFailed(f'{PLURAL} missing from a search over all discovered resources')
            got = res.get(namespace=self.ns)
            if got.kind != f'{KIND}List':
                raise StepFailed(f'list through the dynamic client is a {got.kind}, want {KIND}List')
        return {'resource': res.name, 'verbs': sorted(res.verbs), 'resources': len(everything), 'items': len(got['items']),
                'requests': [f"{c['method']} /{c['url'].split('?')[0]} -> {c.get('status')}" for c in self.rec.since(mark)]}

    def stop(self):
        if self.watcher is not None:
            self.watcher.stop()


def failure(e):
    if isinstance(e, ApiException):
        return {'error': f'{e.status} {e.reason}', 'status': e.status, 'body': e.body}
    return {'error': f'{type(e).__name__}: {e}'}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('kubeconfig')
    parser.add_argument('namespace')
    args = parser.parse_args()

    api_client = config.new_client_from_config(config_file=args.kubeconfig)
    s = Scenario(api_client, args.namespace)
    failed = 0
    for name, run in s.steps():
        mark = s.rec.mark()
        line = {'client': 'python', 'step': name}
        try:
            line.update(ok=True, detail=run())
        except Exception as e:  # every failure is a result line, never a crash
            failed += 1
            line.update(ok=False, **failure(e), requests=s.rec.since(mark))
        print(json.dumps(line), flush=True)
    s.stop()
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
