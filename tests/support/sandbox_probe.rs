// The docs' examples' sandbox (tests/examples/sandbox.rs), written once: `include!`d by
// tests/support/build.rs, which probes it when the tests are built, and by
// tests/support/needs.rs, which runs the examples in it and probes it again when they run.

/// `unshare`'s namespaces: its own PID namespace and /proc (everything it starts dies with its
/// first process), host name, mount table and network.
const SANDBOX: [&str; 6] = [
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
    "--uts",
    "--net",
];

/// What a setup does in the sandbox, tried once: bring the loopback up, name the host, a nested
/// UTS namespace, a bind mount.
const SANDBOX_PROBE: &str = "PATH=$PATH:/usr/sbin:/sbin; ip link set lo up && hostname probe \
    && unshare --uts true && mount --bind /etc/hosts /etc/hosts";
