// The CSV reader of `surge step` and `surge plot` (tools/cli/io.hpp): any bytes as a file, every cell
// then parsed as a number.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_common.hpp"
#include "tools/cli/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = surge::fuzz::write_input(data, size, ".csv");
  surge::fuzz::expect_input_error_only([&] {
    const surge::cli::CsvTable table = surge::cli::CsvTable::read(path);
    for (std::size_t row = 0; row < table.rows.size(); ++row)
      for (std::size_t column = 0; column < table.header.size(); ++column)
        surge::fuzz::expect_input_error_only(
            [&] { (void)surge::cli::parse_cell(table, row, static_cast<int>(column)); });
  });
  return 0;
}
