// Opening a tuning database (tuning_db.h) from arbitrary bytes: a file that is not SQLite, an
// SQLite file of something else, of a newer schema, or damaged anywhere (a page, a JSON column,
// a NULL where a value belongs) must be refused with a tessera::Error — on opening, migrating,
// listing, exporting or collecting garbage — never a crash or another exception. What opens and
// lists exports to JSON that a fresh database imports with the same number of records, or
// refuses with a tessera::Error (a damaged file may hold a target whose hash no longer matches).
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fuzz_util.h"
#include "tessera/tuning_db.h"

using namespace tessera;

namespace {

std::filesystem::path scratch() {
    static const std::filesystem::path dir = [] {
        auto d = std::filesystem::temp_directory_path() / ("tessera-fuzz-db-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::filesystem::path path = scratch() / "input.db", fresh = scratch() / "fresh.db";
    for (const auto &p : {path, fresh})
        for (const char *suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(p.string() + suffix);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(data), std::streamsize(size));

    // Read-only first (what `tessera db list` does), then writable (migration, gc).
    fuzz::accepted([&] {
        TuningDatabase db(path.string(), {.read_only = true});
        db.list();
        db.best_per_group();
    });
    std::string exported;
    int64_t listed = -1;
    fuzz::accepted([&] {
        TuningDatabase db(path.string());
        listed = int64_t(db.list().size());
        exported = db.export_json();
        db.export_csv();
    });
    fuzz::accepted([&] { TuningDatabase(path.string()).gc(1); });
    if (listed < 0) return 0;
    int64_t imported = -1;
    if (!fuzz::accepted([&] {
            TuningDatabase db(fresh.string());
            const ImportSummary s = db.import_json(exported, "export");
            imported = s.added + s.duplicates;
        }))
        return 0;
    fuzz::require(imported == listed, "import found " + std::to_string(imported) + " records, the database listed " +
                                          std::to_string(listed));
    return 0;
}
