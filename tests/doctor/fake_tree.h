// A scratch directory that plays a node's / for the doctor's checks.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rdmarepl::test {

class FakeTree {
 public:
  FakeTree() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "doctor-XXXXXX").string();
    root_ = ::mkdtemp(tmpl.data());
  }
  ~FakeTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  void write(const std::string& path, const std::string& text) const {
    auto p = root_ / std::filesystem::path(path).relative_path();
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

  // One RoCE port as rxe shows it: ACTIVE, Ethernet, a link-local RoCE v1/v2 pair and an
  // IPv4-mapped RoCE v2 entry at index 1... ordered as the kernel lists them.
  void add_roce_port(const std::string& dev, const std::string& state, const std::string& ndev,
                     int netdev_mtu, bool with_v2 = true) const {
    const std::string p = "/sys/class/infiniband/" + dev + "/ports/1";
    write(p + "/state", state == "ACTIVE" ? "4: ACTIVE" : "1: " + state);
    write(p + "/phys_state", state == "ACTIVE" ? "5: LinkUp" : "3: Disabled");
    write(p + "/link_layer", "Ethernet");
    write(p + "/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456");
    write(p + "/gid_attrs/types/0", "IB/RoCE v1");
    write(p + "/gid_attrs/ndevs/0", ndev);
    write(p + "/gids/1", "0000:0000:0000:0000:0000:ffff:0a00:020f");
    write(p + "/gid_attrs/types/1", with_v2 ? "RoCE v2" : "IB/RoCE v1");
    write(p + "/gid_attrs/ndevs/1", ndev);
    write(p + "/gids/2", "0000:0000:0000:0000:0000:0000:0000:0000");
    write("/sys/class/net/" + ndev + "/mtu", std::to_string(netdev_mtu));
  }

 private:
  std::filesystem::path root_;
};

}  // namespace rdmarepl::test
