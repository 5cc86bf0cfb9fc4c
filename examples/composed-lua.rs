//! Prints the Lua text a call sends, as composed for its mode:
//! `cargo run --example composed-lua -- SCRIPT [FEATURE...]`, e.g.
//! `acquire_plain`, or `release announce readers`. scripts/bench-scripts
//! loads these texts into a server to time each call there.

use redlock::lua::{composed, Features};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(script) = args.next() else {
        eprintln!("usage: composed-lua SCRIPT [FEATURE...]");
        std::process::exit(2);
    };
    let mut features = Features::NONE;
    for name in args {
        let Some(feature) = Features::named(&name) else {
            eprintln!("composed-lua: no feature {name:?}");
            std::process::exit(2);
        };
        features = features.with(feature, true);
    }
    print!("{}", composed(&script, features));
}
