// Target values. Which backend realizes a target is decided by the realizer registry
// (realize.cpp); here a Target is only a kind and a name.
#include "tessera/target.h"

namespace tessera {

Target Target::reference() { return Target(Kind::Reference, "reference"); }

Target Target::interpreter() { return Target(Kind::Interpreter, "interpreter"); }

Target Target::host() { return Target(Kind::Host, "host"); }

Target Target::named(const std::string &name) {
    if (name == "reference") return reference();
    if (name == "interpreter") return interpreter();
    if (name == "host") return host();
    // Chip names and JSON paths are validated by the chip backend, which knows the built-in
    // chips and can read the file; the DSL does not depend on it.
    return Target(Kind::Chip, name);
}

} // namespace tessera
