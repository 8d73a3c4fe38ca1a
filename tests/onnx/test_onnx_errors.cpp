// Malformed and unsupported models: each is a tessera::Error naming what is wrong.
#include <gtest/gtest.h>
