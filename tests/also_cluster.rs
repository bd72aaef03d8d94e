//! `run --also` in front of a Redis Cluster: a proxy behind a plain URL (here: a cluster node
//! named by a plain `redis://` URL, which answers the same CROSSSLOT a single-endpoint proxy
//! does) refuses keys of several hash slots in one script before it runs. dlock says it as the
//! usage line a cluster URL gets before anything is sent (exit 2), and nothing is taken. Keys
//! with a common hash tag run through the cluster URL, the job told of every one.

use crate::support::cluster::Cluster;
use crate::support::needs::Need;
use crate::support::*;

#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn a_crossslot_reply_behind_a_plain_url_is_the_hash_tag_usage_line_and_a_common_tag_runs() {
    require!(Need::RedisCli);
    let c = Cluster::start();
    let (k, x) = (c.slot("dlock:backup"), c.slot("dlock:db:main"));
    assert_ne!(k, x);
    // The node serving --key's slot, as a proxy's single endpoint would be.
    let node = &c.nodes[c.owner("dlock:backup")];
    let url = format!("redis://127.0.0.1:{}", node.port.unwrap());
    Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["run", "--key", "backup", "--also", "db:main", "--wait", "0"])
        .args(["--", "echo", "ran"])
        .run()
        .code(2)
        .stdout_is("")
        .one_line_error()
        .stderr_has(&format!(
            "--also dlock:db:main is in Redis Cluster hash slot {x}, --key dlock:backup in {k}: keys in different slots cannot be taken in one step; give them a common hash tag"
        ));
    for node in &c.nodes {
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut node.conn()).unwrap();
        assert!(keys.is_empty(), "a refused run left keys: {keys:?}");
    }
    // With a common hash tag, through the cluster URL: every key taken, the job told of them.
    let show = "printf '%s' \"$DLOCK_ALSO\"";
    Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["-q", "run", "--key", "{db}backup", "--also", "{db}main"])
        .args(["--also", "{db}vacuum", "--", "sh", "-c", show])
        .run()
        .code(0)
        .stdout_is("1\t0\tdlock:{db}main\n1\t0\tdlock:{db}vacuum");
}
