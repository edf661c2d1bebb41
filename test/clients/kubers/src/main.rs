//! kube-rs follower for farm-apiserver's tests: one `kube::runtime::watcher` feeding a `reflector`
//! Store, as a kube-rs controller runs it (default watcher config, default backoff), on the dynamic
//! API of llamas in one namespace. Protocol (same as clientgo's -follow), one JSON line per step:
//!   ready:   {"client":"kube-rs","step":"follow-synced","ok":true,"detail":{"lists":N,...}}
//!   then for each stdin line {"names":[...]}, once the store holds exactly those names:
//!            {"client":"kube-rs","step":"follow-converged","ok":true,"detail":{"lists":N,...}}
//! N counts the watcher's `Event::Init`s: each marks the start of an initial list (or watch-list),
//! so N >= 2 means the watcher really listed again (for instance after a 410 on its resumed watch).
//!
//! Usage: kubers-follow --kubeconfig PATH --namespace NS [--timeout SECONDS]
//!
//! A second mode, `kubers-follow apply ...`, does server-side apply with kube-rs (see apply.rs).

use std::{
    process::ExitCode,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::{StreamExt, future};
use kube::{
    Client, Config, ResourceExt,
    api::{Api, ApiResource, DynamicObject, GroupVersionKind},
    config::{KubeConfigOptions, Kubeconfig},
    runtime::{
        WatchStreamExt,
        reflector::{self, store::Writer},
        watcher,
    },
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

mod apply;

const CLIENT: &str = "kube-rs";
/// The most watcher errors kept for the report (a server down for long makes many).
const MAX_ERRORS_KEPT: usize = 20;

struct Args {
    kubeconfig: String,
    namespace: String,
    timeout: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut kubeconfig = None;
    let mut namespace = None;
    let mut timeout = Duration::from_secs(240);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--kubeconfig" => kubeconfig = Some(value()?),
            "--namespace" => namespace = Some(value()?),
            "--timeout" => {
                let v = value()?;
                timeout = Duration::from_secs(v.parse().map_err(|_| format!("--timeout {v}: not whole seconds"))?);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        kubeconfig: kubeconfig.ok_or("--kubeconfig is required")?,
        namespace: namespace.ok_or("--namespace is required")?,
        timeout,
    })
}

/// What the watcher did, counted from its own events.
#[derive(Default)]
struct Tally {
    /// `Event::Init`: a (re)list began.
    lists: AtomicUsize,
    /// `WatchError` events with code 410 (Expired/Gone): the server forgot our resourceVersion.
    gone: AtomicUsize,
    /// The first few watcher errors, as text.
    errors: Mutex<Vec<String>>,
}

impl Tally {
    fn see(&self, r: &Result<watcher::Event<DynamicObject>, watcher::Error>) {
        match r {
            Ok(watcher::Event::Init) => {
                self.lists.fetch_add(1, Ordering::SeqCst);
            }
            Ok(_) => {}
            Err(e) => {
                if let watcher::Error::WatchError(status) = e
                    && status.code == 410
                {
                    self.gone.fetch_add(1, Ordering::SeqCst);
                }
                eprintln!("kubers-follow: watcher error: {e}");
                let mut errors = self.errors.lock().expect("errors lock");
                if errors.len() < MAX_ERRORS_KEPT {
                    errors.push(e.to_string());
                }
            }
        }
    }

    fn detail(&self) -> Value {
        json!({
            "lists": self.lists.load(Ordering::SeqCst),
            "gone": self.gone.load(Ordering::SeqCst),
            "errors": *self.errors.lock().expect("errors lock"),
        })
    }
}

fn report(step: &str, ok: bool, detail: Value, error: Option<String>) {
    let mut line = json!({ "client": CLIENT, "step": step, "ok": ok, "detail": detail });
    if let Some(e) = error {
        line["error"] = Value::String(e);
    }
    println!("{line}");
}

async fn client_for(kubeconfig: &str) -> Result<Client, String> {
    let kc = Kubeconfig::read_from(kubeconfig).map_err(|e| format!("reading {kubeconfig}: {e}"))?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| format!("kubeconfig {kubeconfig}: {e}"))?;
    Client::try_from(config).map_err(|e| format!("building the client: {e}"))
}

fn sorted_names(store: &reflector::Store<DynamicObject>) -> Vec<String> {
    let mut names: Vec<String> = store.state().iter().map(|o| o.name_any()).collect();
    names.sort();
    names
}

async fn follow(args: Args) -> Result<(), (String, String)> {
    let deadline = tokio::time::Instant::now() + args.timeout;
    let fail = |step: &str| {
        let step = step.to_string();
        move |e: String| (step, e)
    };
    let client = client_for(&args.kubeconfig).await.map_err(fail("follow-synced"))?;
    let gvk = GroupVersionKind::gvk("farm.example.com", "v1alpha", "Llama");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "llamas");
    let api: Api<DynamicObject> = Api::namespaced_with(client, &args.namespace, &ar);

    // As kube::runtime::Controller builds it: reflector(writer, watcher(api, config)), then backoff.
    let writer = Writer::<DynamicObject>::new(ar.clone());
    let store = writer.as_reader();
    let tally = Arc::new(Tally::default());
    let seen = tally.clone();
    let events = watcher(api, watcher::Config::default()).inspect(move |r| seen.see(r));
    let driven = reflector::reflector(writer, events).default_backoff().for_each(|_| future::ready(()));
    tokio::spawn(driven);

    tokio::time::timeout_at(deadline, store.wait_until_ready())
        .await
        .map_err(|_| ("follow-synced".to_string(), format!("store not ready within {:?}", args.timeout)))?
        .map_err(|e| ("follow-synced".to_string(), format!("store writer dropped: {e}")))?;
    report("follow-synced", true, tally.detail(), None);

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Err(_) => return Err(("follow-converged".into(), "timed out waiting for stdin".into())),
            Ok(Err(e)) => return Err(("follow-converged".into(), format!("reading stdin: {e}"))),
            Ok(Ok(None)) => return Ok(()),
            Ok(Ok(Some(l))) if l.trim().is_empty() => continue,
            Ok(Ok(Some(l))) => l,
        };
        let want: Value = serde_json::from_str(&line).map_err(|e| ("follow-converged".to_string(), format!("stdin {line}: {e}")))?;
        let mut want: Vec<String> = want["names"]
            .as_array()
            .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect())
            .ok_or_else(|| ("follow-converged".to_string(), format!("stdin {line}: want {{\"names\":[string...]}}")))?;
        want.sort();
        loop {
            let have = sorted_names(&store);
            if have == want {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                let mut d = tally.detail();
                d["have"] = json!(have);
                report("follow-converged", false, d, Some(format!("store holds {have:?}, want {want:?}")));
                return Err((String::new(), String::new()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        report("follow-converged", true, tally.detail(), None);
    }
}

/// The outcome of a mode: an empty step means the failure was reported already (with its detail).
fn exit_with(outcome: Result<(), (String, String)>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err((step, error)) => {
            if !step.is_empty() {
                report(&step, false, Value::Null, Some(error));
            }
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("apply") {
        return match apply::parse_apply_args(std::env::args().skip(2)) {
            Ok(a) => exit_with(apply::apply(a).await),
            Err(e) => {
                eprintln!("kubers-follow apply: {e}\nusage: kubers-follow apply --kubeconfig PATH --namespace NS --name NAME --manager M --rival R [--group G] [--timeout SECONDS]");
                ExitCode::from(2)
            }
        };
    }
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("kubers-follow: {e}\nusage: kubers-follow --kubeconfig PATH --namespace NS [--timeout SECONDS]");
            return ExitCode::from(2);
        }
    };
    exit_with(follow(args).await)
}
