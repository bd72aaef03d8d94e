//! `Image`'s preparation, without starting anything.

use super::*;

fn strings(v: &[CString]) -> Vec<String> {
    v.iter().map(|c| c.to_string_lossy().into_owned()).collect()
}

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

#[test]
fn a_bare_name_is_looked_up_on_path_in_order_as_execvp_does() {
    let path = Some(OsString::from("/opt/bin::/usr/bin"));
    let image = Image::prepare(&os(&["job", "a b"]), &[], path, Vec::new());
    let image = image.unwrap_or_else(|| panic!("prepared"));
    // An empty PATH entry is the current directory.
    assert_eq!(
        strings(&image.candidates),
        ["/opt/bin/job", "job", "/usr/bin/job"]
    );
    assert_eq!(strings(&image.argv), ["job", "a b"]);
    // No PATH at all: the system default.
    let image = Image::prepare(&os(&["job"]), &[], None, Vec::new());
    let candidates = image.map(|i| strings(&i.candidates)).unwrap_or_default();
    assert_eq!(candidates, ["/bin/job", "/usr/bin/job"]);
}

#[test]
fn a_name_with_a_slash_is_the_only_candidate() {
    let path = Some(OsString::from("/opt/bin"));
    let image = Image::prepare(&os(&["./job"]), &[], path, Vec::new());
    let candidates = image.map(|i| strings(&i.candidates)).unwrap_or_default();
    assert_eq!(candidates, ["./job"]);
}

#[test]
fn dlocks_variables_replace_stale_ones_and_the_rest_is_inherited() {
    let inherited = ["HOME=/root", "DLOCK_TOKEN=stale", "DLOCK_TOKENS=kept"]
        .map(|kv| CString::new(kv).unwrap_or_default());
    let env = [("DLOCK_TOKEN", "fresh".to_string())];
    let image = Image::prepare(&os(&["job"]), &env, None, inherited.to_vec());
    let envp = image.map(|i| strings(&i.envp)).unwrap_or_default();
    assert_eq!(
        envp,
        ["HOME=/root", "DLOCK_TOKENS=kept", "DLOCK_TOKEN=fresh"]
    );
}

/// What the C library holds is what std reads: every variable, once, as NAME=value.
#[test]
fn the_inherited_environment_is_what_std_sees() {
    let mut ours = strings(&inherited_env());
    let mut std: Vec<String> = std::env::vars_os()
        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
        .collect();
    ours.sort();
    std.sort();
    assert!(!std.is_empty());
    assert_eq!(ours, std);
}

#[test]
fn a_nul_byte_cannot_be_prepared() {
    let image = Image::prepare(&os(&["job", "a\0b"]), &[], None, Vec::new());
    assert!(image.is_none());
}

#[test]
fn contained_as_root_is_a_pid_namespace_and_otherwise_a_user_namespace_mapping_us() {
    let image = || Image::prepare(&os(&["job"]), &[], None, Vec::new());
    let root = image().and_then(|i| i.contained_as(0, 0));
    let ns = root
        .and_then(|i| i.ns)
        .unwrap_or_else(|| panic!("prepared"));
    assert_eq!(ns.flags, libc::CLONE_NEWPID);
    assert!(ns.writes.is_empty());
    let user = image().and_then(|i| i.contained_as(1000, 100));
    let ns = user
        .and_then(|i| i.ns)
        .unwrap_or_else(|| panic!("prepared"));
    assert_eq!(ns.flags, libc::CLONE_NEWPID | libc::CLONE_NEWUSER);
    let writes: Vec<(String, String)> = ns
        .writes
        .iter()
        .map(|(p, b)| {
            (
                p.to_string_lossy().into_owned(),
                String::from_utf8_lossy(b).into_owned(),
            )
        })
        .collect();
    // setgroups must be denied before an unprivileged gid_map is accepted.
    assert_eq!(
        writes,
        [
            ("/proc/self/setgroups".into(), "deny".into()),
            ("/proc/self/uid_map".into(), "1000 1000 1".into()),
            ("/proc/self/gid_map".into(), "100 100 1".into()),
        ]
    );
}
