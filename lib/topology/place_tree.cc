#include "msd/place_tree.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace msd {

const char* axis_name(Axis axis) {
  switch (axis) {
    case Axis::tp: return "tp";
    case Axis::cp: return "cp";
    case Axis::dp: return "dp";
    case Axis::pp: return "pp";
  }
  return "?";
}

const char* role_name(Role role) {
  switch (role) {
    case Role::planner: return "planner";
    case Role::loader: return "loader";
    case Role::client: return "client";
  }
  return "?";
}

int Place::get(Axis axis) const {
  switch (axis) {
    case Axis::tp: return tp;
    case Axis::cp: return cp;
    case Axis::dp: return dp;
    case Axis::pp: return pp;
  }
  return 0;
}

namespace {
int& coordinate(Place& place, Axis axis) {
  switch (axis) {
    case Axis::tp: return place.tp;
    case Axis::cp: return place.cp;
    case Axis::dp: return place.dp;
    case Axis::pp: return place.pp;
  }
  return place.tp;
}
}  // namespace

ClientPlaceTree::ClientPlaceTree(int dp, int pp, int cp, int tp, const std::string& order)
    : dp_(dp), pp_(pp), cp_(cp), tp_(tp) {
  if (dp < 1 || pp < 1 || cp < 1 || tp < 1)
    throw ConfigError(str("topology: dp, pp, cp and tp must be >= 1 (got dp=", dp, " pp=", pp, " cp=", cp,
                          " tp=", tp, ")"));
  std::istringstream in(order);
  std::string name;
  int count = 0;
  std::array<bool, 4> seen{};
  while (std::getline(in, name, ',')) {
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    Axis axis;
    if (name == "tp") axis = Axis::tp;
    else if (name == "cp") axis = Axis::cp;
    else if (name == "dp") axis = Axis::dp;
    else if (name == "pp") axis = Axis::pp;
    else throw ConfigError(str("topology.order: unknown axis '", name, "' in '", order, "' (expected tp, cp, dp, pp)"));
    if (count >= 4 || seen[static_cast<int>(axis)])
      throw ConfigError(str("topology.order: '", order, "' must name each of tp, cp, dp, pp exactly once"));
    seen[static_cast<int>(axis)] = true;
    order_[static_cast<size_t>(count++)] = axis;
  }
  if (count != 4) throw ConfigError(str("topology.order: '", order, "' must name each of tp, cp, dp, pp exactly once"));
  int stride = 1;
  for (Axis axis : order_) {
    stride_[static_cast<size_t>(axis)] = stride;
    stride *= dim(axis);
  }
}

int ClientPlaceTree::dim(Axis axis) const {
  switch (axis) {
    case Axis::tp: return tp_;
    case Axis::cp: return cp_;
    case Axis::dp: return dp_;
    case Axis::pp: return pp_;
  }
  return 1;
}

Place ClientPlaceTree::place(int client) const {
  MSD_CHECK(client >= 0 && client < size());
  Place place;
  for (Axis axis : order_) {
    coordinate(place, axis) = (client / stride_[static_cast<size_t>(axis)]) % dim(axis);
  }
  return place;
}

int ClientPlaceTree::client(const Place& place) const {
  int index = 0;
  for (Axis axis : order_) {
    int c = place.get(axis);
    MSD_CHECK(c >= 0 && c < dim(axis));
    index += c * stride_[static_cast<size_t>(axis)];
  }
  return index;
}

// Every combination of the other axes at dp = data_group: O(group size), not
// O(clients), since the planner asks for every group's members every step.
std::vector<int> ClientPlaceTree::group_members(int data_group) const {
  MSD_CHECK(data_group >= 0 && data_group < dp_);
  std::vector<int> members;
  members.reserve(static_cast<size_t>(pp_ * cp_ * tp_));
  Place p;
  p.dp = data_group;
  for (p.pp = 0; p.pp < pp_; ++p.pp)
    for (p.cp = 0; p.cp < cp_; ++p.cp)
      for (p.tp = 0; p.tp < tp_; ++p.tp) members.push_back(client(p));
  std::sort(members.begin(), members.end());
  return members;
}

std::vector<int> ClientPlaceTree::axis_peers(int client_index, Axis axis) const {
  Place base = place(client_index);
  std::vector<int> peers;
  for (int i = 0; i < dim(axis); ++i) {
    Place p = base;
    coordinate(p, axis) = i;
    peers.push_back(client(p));
  }
  return peers;
}

}  // namespace msd
