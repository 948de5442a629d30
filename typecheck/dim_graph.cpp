#include "typecheck/dim_graph.h"

#include <algorithm>
#include <functional>

namespace dccc {

size_t DimGraph::add_node(std::string name) {
  names_.push_back(std::move(name));
  edges_.emplace_back();
  return names_.size() - 1;
}

void DimGraph::add_edge(size_t from, size_t to) {
  auto& e = edges_[from];
  if (std::find(e.begin(), e.end(), to) == e.end()) e.push_back(to);
}

std::optional<std::vector<size_t>> DimGraph::find_cycle() const {
  // Iterative DFS with colours; the graph is small but user-controlled.
  enum Colour { White, Grey, Black };
  std::vector<Colour> colour(size(), White);
  std::vector<size_t> parent(size(), SIZE_MAX);
  for (size_t root = 0; root < size(); ++root) {
    if (colour[root] != White) continue;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
    colour[root] = Grey;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < edges_[node].size()) {
        size_t to = edges_[node][next++];
        if (colour[to] == Grey) {
          std::vector<size_t> path;
          for (auto& frame : stack) path.push_back(frame.first);
          auto start = std::find(path.begin(), path.end(), to);
          std::vector<size_t> cycle(start, path.end());
          cycle.push_back(to);
          return cycle;
        }
        if (colour[to] == White) {
          colour[to] = Grey;
          stack.emplace_back(to, 0);
        }
      } else {
        colour[node] = Black;
        stack.pop_back();
      }
    }
  }
  return std::nullopt;
}

std::vector<size_t> DimGraph::topo_order() const {
  if (find_cycle()) return {};
  std::vector<size_t> order;
  std::vector<bool> done(size(), false);
  // Repeatedly emit nodes whose dependencies are all emitted (stable order).
  while (order.size() < size()) {
    for (size_t n = 0; n < size(); ++n) {
      if (done[n]) continue;
      bool ready = std::all_of(edges_[n].begin(), edges_[n].end(), [&](size_t d) { return done[d]; });
      if (ready) {
        done[n] = true;
        order.push_back(n);
      }
    }
  }
  return order;
}

std::string DimGraph::path_str(const std::vector<size_t>& path) const {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) out += (i ? " -> `" : "`") + names_[path[i]] + "`";
  return out;
}

}  // namespace dccc
