//! `kubers-follow apply`: server-side apply with kube-rs, as a kube-rs controller does it
//! (`Api::patch` / `Api::patch_status` with `Patch::Apply` and `PatchParams::apply(manager)`), on the
//! dynamic API of llamas. One JSON line per step, `detail` holding the server's answer (the object,
//! or for the expected conflict the Status kube-rs decoded), so the calling test asserts on it:
//!   apply           MANAGER applies spec {weight 120, height 1.7, color brown} (creates the llama)
//!   apply-noop      MANAGER applies the same again (nothing to write)
//!   apply-conflict  RIVAL applies color black without force: ok when kube-rs returns a 409 Status
//!   apply-force     RIVAL applies color black with .force()
//!   apply-status    MANAGER applies /status (`patch_status`, .force()) with a Ready=True condition
//!
//! Usage: kubers-follow apply --kubeconfig PATH --namespace NS --name NAME --manager M --rival R
//!        [--group G (default farm.example.com: another group serving the same Llama, e.g. a CRD)] [--timeout SECONDS]

use std::time::Duration;

use kube::{
    Error,
    api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams},
};
use serde_json::{Value, json};

use crate::{client_for, report};

pub struct ApplyArgs {
    kubeconfig: String,
    namespace: String,
    name: String,
    manager: String,
    rival: String,
    group: String,
    timeout: Duration,
}

pub fn parse_apply_args(args: impl Iterator<Item = String>) -> Result<ApplyArgs, String> {
    let (mut kubeconfig, mut namespace, mut name, mut manager, mut rival) = (None, None, None, None, None);
    let mut group = "farm.example.com".to_string();
    let mut timeout = Duration::from_secs(60);
    let mut it = args;
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--kubeconfig" => kubeconfig = Some(value()?),
            "--namespace" => namespace = Some(value()?),
            "--name" => name = Some(value()?),
            "--manager" => manager = Some(value()?),
            "--rival" => rival = Some(value()?),
            "--group" => group = value()?,
            "--timeout" => {
                let v = value()?;
                timeout = Duration::from_secs(v.parse().map_err(|_| format!("--timeout {v}: not whole seconds"))?);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(ApplyArgs {
        kubeconfig: kubeconfig.ok_or("--kubeconfig is required")?,
        namespace: namespace.ok_or("--namespace is required")?,
        name: name.ok_or("--name is required")?,
        manager: manager.ok_or("--manager is required")?,
        rival: rival.ok_or("--rival is required")?,
        group,
        timeout,
    })
}

fn llama(group: &str, name: &str, body: Value) -> Value {
    let mut o = json!({ "apiVersion": format!("{group}/v1alpha"), "kind": "Llama", "metadata": { "name": name } });
    if let (Some(o), Some(body)) = (o.as_object_mut(), body.as_object()) {
        o.extend(body.clone());
    }
    o
}

fn as_json(o: &DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or_else(|e| json!({ "unserializable": e.to_string() }))
}

/// Runs the steps in order; the first unexpected outcome is returned as (step, error) after being reported.
pub async fn apply(args: ApplyArgs) -> Result<(), (String, String)> {
    let run = async {
        let client = client_for(&args.kubeconfig).await.map_err(|e| ("apply".to_string(), e))?;
        let gvk = GroupVersionKind::gvk(&args.group, "v1alpha", "Llama");
        let ar = ApiResource::from_gvk_with_plural(&gvk, "llamas");
        let api: Api<DynamicObject> = Api::namespaced_with(client, &args.namespace, &ar);
        let mine = PatchParams::apply(&args.manager);
        let brown = llama(&args.group, &args.name, json!({ "spec": { "weight": 120, "height": 1.7, "color": "brown" } }));
        let black = llama(&args.group, &args.name, json!({ "spec": { "color": "black" } }));

        for step in ["apply", "apply-noop"] {
            let o = api.patch(&args.name, &mine, &Patch::Apply(&brown)).await.map_err(|e| (step.to_string(), e.to_string()))?;
            report(step, true, as_json(&o), None);
        }

        match api.patch(&args.name, &PatchParams::apply(&args.rival), &Patch::Apply(&black)).await {
            Err(Error::Api(status)) if status.code == 409 => {
                report("apply-conflict", true, serde_json::to_value(&status).unwrap_or(Value::Null), None)
            }
            Err(e) => return Err(("apply-conflict".to_string(), format!("want a 409 Status, got error {e}"))),
            Ok(o) => {
                report("apply-conflict", false, as_json(&o), Some("want a 409 Status, the apply succeeded".into()));
                return Err((String::new(), String::new()));
            }
        }

        let o = api
            .patch(&args.name, &PatchParams::apply(&args.rival).force(), &Patch::Apply(&black))
            .await
            .map_err(|e| ("apply-force".to_string(), e.to_string()))?;
        report("apply-force", true, as_json(&o), None);

        let generation = o.metadata.generation.unwrap_or(0);
        let status = llama(&args.group, &args.name, json!({
            "status": {
                "observedGeneration": generation,
                "conditions": [{
                    "type": "Ready", "status": "True", "reason": "Reconciled", "message": "kube-rs applied this",
                    "lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": generation,
                }],
            },
        }));
        let o = api
            .patch_status(&args.name, &mine.clone().force(), &Patch::Apply(&status))
            .await
            .map_err(|e| ("apply-status".to_string(), e.to_string()))?;
        report("apply-status", true, as_json(&o), None);
        Ok(())
    };
    tokio::time::timeout(args.timeout, run)
        .await
        .map_err(|_| ("apply".to_string(), format!("not done within {:?}", args.timeout)))?
}
