// How the tuning database names a target: its name and a hash of its whole description, so
// that a record measured on one chip description never answers a query for another — an
// edited copy of tsp-mini with one bank fewer is a different target, whatever it is called.
#include "tessera/tuning_db.h"

#include <nlohmann/json.hpp>

#include "tessera/chipsim/target.h"
#include "tessera/codegen/host_features.h"
#include "tessera/error.h"

namespace tessera {

const std::string &compiler_version() {
    static const std::string version = TESSERA_VERSION_STRING;
    return version;
}

TargetIdentity TargetIdentity::of(const Target &target) {
    TargetIdentity id;
    switch (target.kind()) {
    case Target::Kind::Chip: {
        // chipsim's normal form: field order and number formatting fixed, `source` (where the
        // file was) left out — the same chip loaded from two paths is one target, and an edit
        // that changes no value (whitespace, key order) changes nothing.
        const chipsim::Target t = chipsim::load_target(target.name());
        id.name = t.name;
        id.json = t.to_json();
        id.chip = true;
        break;
    }
    case Target::Kind::Host: {
        // Host timings hold for this CPU model with these features and this many cores: a record
        // from an AVX-512 machine must not be taken as the best on an AVX2 one.
        const HostFeatures &f = host_features();
        nlohmann::json j = {{"kind", "host"},         {"cpu", f.cpu},     {"features", f.features},
                            {"vector_bits", f.vector_bits}, {"cores", f.cores}};
        id.name = "host";
        id.json = j.dump();
        id.chip = false;
        break;
    }
    case Target::Kind::Reference:
    case Target::Kind::Interpreter:
        throw Error("tuning database: target '" + target.name() +
                    "' is not tuned (it does not measure speed); records are kept for the host and for chips");
    }
    id.hash = fnv1a_hex(id.json);
    return id;
}

} // namespace tessera
