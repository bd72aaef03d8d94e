//! One real script call (dlock's own call structs: their script, KEYS and ARGV, and their
//! reading of the reply) run on the simulated server, or sent to a real one.

use crate::keyspace::Answer;
use crate::lua::Engine;
use dlock::api::sim::Call;

/// What EVAL is sent for a call.
#[derive(Clone)]
pub struct Scripted {
    /// The call's type, for messages.
    pub name: &'static str,
    pub source: &'static str,
    pub keys: Vec<String>,
    pub argv: Vec<String>,
}

pub fn scripted<C: Call>(c: &C) -> Scripted {
    let name = std::any::type_name::<C>();
    Scripted {
        name: name.rsplit("::").next().unwrap_or(name),
        source: c.script().source(),
        keys: c.keys().into_iter().map(String::from).collect(),
        argv: c.argv(),
    }
}

impl Scripted {
    pub fn run(&self, engine: &mut Engine) -> Answer {
        let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        engine.eval(self.source, &keys, &self.argv)
    }
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = if self.name.is_empty() {
            self.source
        } else {
            self.name
        };
        write!(f, "{name} KEYS {:?} ARGV {:?}", self.keys, self.argv)
    }
}
