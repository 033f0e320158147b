// The RDMA part of the check-list, from the facts about the devices (rdma_facts.h): each
// check gives one line per device or port, or one FAIL saying why it could not look.
#pragma once

#include <vector>

#include "check.h"
#include "needs.h"
#include "rdma_facts.h"
#include "sysroot.h"

namespace rdmarepl::doctor {

std::vector<Check> check_devices(const std::vector<DeviceFacts>& devices);
std::vector<Check> check_ports(const std::vector<DeviceFacts>& devices);
std::vector<Check> check_opcodes(const std::vector<DeviceFacts>& devices);
std::vector<Check> check_gids(const std::vector<DeviceFacts>& devices);
// Reads each RoCE port's netdev MTU from <root>/sys/class/net/<ndev>/mtu.
std::vector<Check> check_mtus(const std::vector<DeviceFacts>& devices, const SysRoot& root);
std::vector<Check> check_limits(const std::vector<DeviceFacts>& devices, const ChannelNeeds& n);

// All of the above, in the order the doctor prints them.
std::vector<Check> rdma_checks(const std::vector<DeviceFacts>& devices, const SysRoot& root,
                               const ChannelNeeds& needs);

}  // namespace rdmarepl::doctor
