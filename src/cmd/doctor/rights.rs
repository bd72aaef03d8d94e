//! The rights row: every command dlock's paths send, checked for the user dlock connects as.
//! `ACL DRYRUN` where the user may run it (an admin); otherwise each command is tried on a
//! scratch key under the prefix, `{PREFIXdoctor:RANDOM}` (a hash tag: one slot on a Cluster),
//! the commands dlock's scripts call inside one script (ACL applies there too), and the key is
//! deleted in that same script. No real lock's key is ever named.

use redis::RedisResult;

use crate::cli::config::DoctorConfig;
use crate::core::doctor::Row;
use crate::core::doctor::rights::{self, Method, Need, Verdict, Verdicts};
use crate::store::conn::Conn;
use crate::store::rights as read;

pub(super) fn rights(cfg: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let target = &cfg.server.target;
    let (db, key) = (target.db(), scratch_key(&cfg.prefix));
    let needs = rights::needs(db != 0, target.is_cluster());
    let whoami = read::whoami(c)?;
    if let Some(me) = &whoami
        && let Some(verdicts) = dry_run(c, me, &needs, &key, db)?
    {
        return Ok(rights::rights(
            me,
            &cfg.prefix,
            Method::DryRun,
            &verdicts,
            None,
        ));
    }
    let user = whoami.as_deref().or(target.user()).unwrap_or("default");
    let (verdicts, left) = trial(c, &needs, &key, db)?;
    let left = left.map(|why| format!("{key} ({why})"));
    Ok(rights::rights(
        user,
        &cfg.prefix,
        Method::Trial,
        &verdicts,
        left.as_deref(),
    ))
}

/// `{PREFIXdoctor:RANDOM}`: under the prefix (so the user's key patterns apply as to a lock's
/// keys), and a name no lock can have.
fn scratch_key(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{{{prefix}doctor:{}}}", &id[..16])
}

/// Every need by `ACL DRYRUN`, or None when the server refuses DRYRUN (NOPERM: the dlock user
/// usually lacks it) or does not have it (before 7.0): the first answer tells.
fn dry_run(
    c: &mut Conn,
    user: &str,
    needs: &[Need],
    key: &str,
    db: i64,
) -> RedisResult<Option<Verdicts>> {
    let mut verdicts = Vec::with_capacity(needs.len());
    for (i, n) in needs.iter().enumerate() {
        let answer = read::dryrun(c, user, &n.words(key, db))?;
        let verdict = rights::from_dryrun(answer.as_deref().map_err(String::as_str));
        if i == 0 && matches!(verdict, Verdict::Unknown(_)) {
            return Ok(None);
        }
        verdicts.push((*n, verdict));
    }
    Ok(Some(verdicts))
}

/// Every need tried: the direct ones one by one, the scripts' ones in one trial script.
/// Also why the scratch key could not be deleted, if it could not.
fn trial(
    c: &mut Conn,
    needs: &[Need],
    key: &str,
    db: i64,
) -> RedisResult<(Verdicts, Option<String>)> {
    let (in_script, direct): (Vec<Need>, Vec<Need>) = needs.iter().partition(|n| n.in_script);
    let mut verdicts = Vec::with_capacity(needs.len());
    for n in direct {
        let v = match read::attempt(c, &n.words(key, db))? {
            Ok(()) => Verdict::Allowed,
            Err(text) => rights::from_error(&text),
        };
        verdicts.push((n, v));
    }
    let words: Vec<Vec<String>> = in_script.iter().map(|n| n.words(key, db)).collect();
    let mut left = None;
    match read::attempt_in_script(c, key, &words)? {
        Ok(t) => {
            for (i, n) in in_script.into_iter().enumerate() {
                let v = match t.errors.get(i).map(String::as_str) {
                    Some("") => Verdict::Allowed,
                    Some(err) => rights::from_error(err),
                    None => Verdict::Unknown("the trial script gave no answer".into()),
                };
                verdicts.push((n, v));
            }
            left = t.left;
        }
        Err(why) => {
            let why = format!("not tried: the trial script could not run ({why})");
            verdicts.extend(
                in_script
                    .into_iter()
                    .map(|n| (n, Verdict::Unknown(why.clone()))),
            );
        }
    }
    Ok((verdicts, left))
}
