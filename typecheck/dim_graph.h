// The coupling dimension graph: which field's extents depend on which.
//
// Nodes are the fields of one coupling; an edge a -> b says that an extent
// of a reads b (a length array). The checker rejects cycles and uses the
// topological order to check and lay out fields (lengths before data).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dccc {

class DimGraph {
 public:
  /// Adds a node; returns its id. Names must be unique.
  size_t add_node(std::string name);
  /// Records that `from`'s extents depend on `to`.
  void add_edge(size_t from, size_t to);
  size_t size() const { return names_.size(); }
  const std::string& name(size_t n) const { return names_[n]; }
  const std::vector<size_t>& deps(size_t n) const { return edges_[n]; }

  /// A cycle as a node path whose last element repeats the first, or nullopt.
  std::optional<std::vector<size_t>> find_cycle() const;
  /// Nodes with every dependency before its dependents; empty if cyclic.
  std::vector<size_t> topo_order() const;
  /// "a -> b -> a"
  std::string path_str(const std::vector<size_t>& path) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<size_t>> edges_;
};

}  // namespace dccc
