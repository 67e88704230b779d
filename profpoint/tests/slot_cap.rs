//! A cap on slot memory (a hostile host): a thread that touches many points holds one
//! 11,392-byte slot per point. With `PROFPOINT_MAX_SLOT_MB=1` (92 slots), a thread calling 200
//! points 3 times each: one warning line, slot memory within the cap, and every call accounted
//! for: recorded in its point's row (all 3 calls) or counted as not recorded, exactly 600.
//! The cap is read at start-up, so the scenario runs in a child (this test binary again).

mod common;

mod points {
    profpoint::define_profile_point!(P000);
    profpoint::define_profile_point!(P001);
    profpoint::define_profile_point!(P002);
    profpoint::define_profile_point!(P003);
    profpoint::define_profile_point!(P004);
    profpoint::define_profile_point!(P005);
    profpoint::define_profile_point!(P006);
    profpoint::define_profile_point!(P007);
    profpoint::define_profile_point!(P008);
    profpoint::define_profile_point!(P009);
    profpoint::define_profile_point!(P010);
    profpoint::define_profile_point!(P011);
    profpoint::define_profile_point!(P012);
    profpoint::define_profile_point!(P013);
    profpoint::define_profile_point!(P014);
    profpoint::define_profile_point!(P015);
    profpoint::define_profile_point!(P016);
    profpoint::define_profile_point!(P017);
    profpoint::define_profile_point!(P018);
    profpoint::define_profile_point!(P019);
    profpoint::define_profile_point!(P020);
    profpoint::define_profile_point!(P021);
    profpoint::define_profile_point!(P022);
    profpoint::define_profile_point!(P023);
    profpoint::define_profile_point!(P024);
    profpoint::define_profile_point!(P025);
    profpoint::define_profile_point!(P026);
    profpoint::define_profile_point!(P027);
    profpoint::define_profile_point!(P028);
    profpoint::define_profile_point!(P029);
    profpoint::define_profile_point!(P030);
    profpoint::define_profile_point!(P031);
    profpoint::define_profile_point!(P032);
    profpoint::define_profile_point!(P033);
    profpoint::define_profile_point!(P034);
    profpoint::define_profile_point!(P035);
    profpoint::define_profile_point!(P036);
    profpoint::define_profile_point!(P037);
    profpoint::define_profile_point!(P038);
    profpoint::define_profile_point!(P039);
    profpoint::define_profile_point!(P040);
    profpoint::define_profile_point!(P041);
    profpoint::define_profile_point!(P042);
    profpoint::define_profile_point!(P043);
    profpoint::define_profile_point!(P044);
    profpoint::define_profile_point!(P045);
    profpoint::define_profile_point!(P046);
    profpoint::define_profile_point!(P047);
    profpoint::define_profile_point!(P048);
    profpoint::define_profile_point!(P049);
    profpoint::define_profile_point!(P050);
    profpoint::define_profile_point!(P051);
    profpoint::define_profile_point!(P052);
    profpoint::define_profile_point!(P053);
    profpoint::define_profile_point!(P054);
    profpoint::define_profile_point!(P055);
    profpoint::define_profile_point!(P056);
    profpoint::define_profile_point!(P057);
    profpoint::define_profile_point!(P058);
    profpoint::define_profile_point!(P059);
    profpoint::define_profile_point!(P060);
    profpoint::define_profile_point!(P061);
    profpoint::define_profile_point!(P062);
    profpoint::define_profile_point!(P063);
    profpoint::define_profile_point!(P064);
    profpoint::define_profile_point!(P065);
    profpoint::define_profile_point!(P066);
    profpoint::define_profile_point!(P067);
    profpoint::define_profile_point!(P068);
    profpoint::define_profile_point!(P069);
    profpoint::define_profile_point!(P070);
    profpoint::define_profile_point!(P071);
    profpoint::define_profile_point!(P072);
    profpoint::define_profile_point!(P073);
    profpoint::define_profile_point!(P074);
    profpoint::define_profile_point!(P075);
    profpoint::define_profile_point!(P076);
    profpoint::define_profile_point!(P077);
    profpoint::define_profile_point!(P078);
    profpoint::define_profile_point!(P079);
    profpoint::define_profile_point!(P080);
    profpoint::define_profile_point!(P081);
    profpoint::define_profile_point!(P082);
    profpoint::define_profile_point!(P083);
    profpoint::define_profile_point!(P084);
    profpoint::define_profile_point!(P085);
    profpoint::define_profile_point!(P086);
    profpoint::define_profile_point!(P087);
    profpoint::define_profile_point!(P088);
    profpoint::define_profile_point!(P089);
    profpoint::define_profile_point!(P090);
    profpoint::define_profile_point!(P091);
    profpoint::define_profile_point!(P092);
    profpoint::define_profile_point!(P093);
    profpoint::define_profile_point!(P094);
    profpoint::define_profile_point!(P095);
    profpoint::define_profile_point!(P096);
    profpoint::define_profile_point!(P097);
    profpoint::define_profile_point!(P098);
    profpoint::define_profile_point!(P099);
    profpoint::define_profile_point!(P100);
    profpoint::define_profile_point!(P101);
    profpoint::define_profile_point!(P102);
    profpoint::define_profile_point!(P103);
    profpoint::define_profile_point!(P104);
    profpoint::define_profile_point!(P105);
    profpoint::define_profile_point!(P106);
    profpoint::define_profile_point!(P107);
    profpoint::define_profile_point!(P108);
    profpoint::define_profile_point!(P109);
    profpoint::define_profile_point!(P110);
    profpoint::define_profile_point!(P111);
    profpoint::define_profile_point!(P112);
    profpoint::define_profile_point!(P113);
    profpoint::define_profile_point!(P114);
    profpoint::define_profile_point!(P115);
    profpoint::define_profile_point!(P116);
    profpoint::define_profile_point!(P117);
    profpoint::define_profile_point!(P118);
    profpoint::define_profile_point!(P119);
    profpoint::define_profile_point!(P120);
    profpoint::define_profile_point!(P121);
    profpoint::define_profile_point!(P122);
    profpoint::define_profile_point!(P123);
    profpoint::define_profile_point!(P124);
    profpoint::define_profile_point!(P125);
    profpoint::define_profile_point!(P126);
    profpoint::define_profile_point!(P127);
    profpoint::define_profile_point!(P128);
    profpoint::define_profile_point!(P129);
    profpoint::define_profile_point!(P130);
    profpoint::define_profile_point!(P131);
    profpoint::define_profile_point!(P132);
    profpoint::define_profile_point!(P133);
    profpoint::define_profile_point!(P134);
    profpoint::define_profile_point!(P135);
    profpoint::define_profile_point!(P136);
    profpoint::define_profile_point!(P137);
    profpoint::define_profile_point!(P138);
    profpoint::define_profile_point!(P139);
    profpoint::define_profile_point!(P140);
    profpoint::define_profile_point!(P141);
    profpoint::define_profile_point!(P142);
    profpoint::define_profile_point!(P143);
    profpoint::define_profile_point!(P144);
    profpoint::define_profile_point!(P145);
    profpoint::define_profile_point!(P146);
    profpoint::define_profile_point!(P147);
    profpoint::define_profile_point!(P148);
    profpoint::define_profile_point!(P149);
    profpoint::define_profile_point!(P150);
    profpoint::define_profile_point!(P151);
    profpoint::define_profile_point!(P152);
    profpoint::define_profile_point!(P153);
    profpoint::define_profile_point!(P154);
    profpoint::define_profile_point!(P155);
    profpoint::define_profile_point!(P156);
    profpoint::define_profile_point!(P157);
    profpoint::define_profile_point!(P158);
    profpoint::define_profile_point!(P159);
    profpoint::define_profile_point!(P160);
    profpoint::define_profile_point!(P161);
    profpoint::define_profile_point!(P162);
    profpoint::define_profile_point!(P163);
    profpoint::define_profile_point!(P164);
    profpoint::define_profile_point!(P165);
    profpoint::define_profile_point!(P166);
    profpoint::define_profile_point!(P167);
    profpoint::define_profile_point!(P168);
    profpoint::define_profile_point!(P169);
    profpoint::define_profile_point!(P170);
    profpoint::define_profile_point!(P171);
    profpoint::define_profile_point!(P172);
    profpoint::define_profile_point!(P173);
    profpoint::define_profile_point!(P174);
    profpoint::define_profile_point!(P175);
    profpoint::define_profile_point!(P176);
    profpoint::define_profile_point!(P177);
    profpoint::define_profile_point!(P178);
    profpoint::define_profile_point!(P179);
    profpoint::define_profile_point!(P180);
    profpoint::define_profile_point!(P181);
    profpoint::define_profile_point!(P182);
    profpoint::define_profile_point!(P183);
    profpoint::define_profile_point!(P184);
    profpoint::define_profile_point!(P185);
    profpoint::define_profile_point!(P186);
    profpoint::define_profile_point!(P187);
    profpoint::define_profile_point!(P188);
    profpoint::define_profile_point!(P189);
    profpoint::define_profile_point!(P190);
    profpoint::define_profile_point!(P191);
    profpoint::define_profile_point!(P192);
    profpoint::define_profile_point!(P193);
    profpoint::define_profile_point!(P194);
    profpoint::define_profile_point!(P195);
    profpoint::define_profile_point!(P196);
    profpoint::define_profile_point!(P197);
    profpoint::define_profile_point!(P198);
    profpoint::define_profile_point!(P199);

    pub(crate) fn child() {
        for _ in 0..3 {
            let t = P000.start();
            P000.leave(t);
        }
        for _ in 0..3 {
            let t = P001.start();
            P001.leave(t);
        }
        for _ in 0..3 {
            let t = P002.start();
            P002.leave(t);
        }
        for _ in 0..3 {
            let t = P003.start();
            P003.leave(t);
        }
        for _ in 0..3 {
            let t = P004.start();
            P004.leave(t);
        }
        for _ in 0..3 {
            let t = P005.start();
            P005.leave(t);
        }
        for _ in 0..3 {
            let t = P006.start();
            P006.leave(t);
        }
        for _ in 0..3 {
            let t = P007.start();
            P007.leave(t);
        }
        for _ in 0..3 {
            let t = P008.start();
            P008.leave(t);
        }
        for _ in 0..3 {
            let t = P009.start();
            P009.leave(t);
        }
        for _ in 0..3 {
            let t = P010.start();
            P010.leave(t);
        }
        for _ in 0..3 {
            let t = P011.start();
            P011.leave(t);
        }
        for _ in 0..3 {
            let t = P012.start();
            P012.leave(t);
        }
        for _ in 0..3 {
            let t = P013.start();
            P013.leave(t);
        }
        for _ in 0..3 {
            let t = P014.start();
            P014.leave(t);
        }
        for _ in 0..3 {
            let t = P015.start();
            P015.leave(t);
        }
        for _ in 0..3 {
            let t = P016.start();
            P016.leave(t);
        }
        for _ in 0..3 {
            let t = P017.start();
            P017.leave(t);
        }
        for _ in 0..3 {
            let t = P018.start();
            P018.leave(t);
        }
        for _ in 0..3 {
            let t = P019.start();
            P019.leave(t);
        }
        for _ in 0..3 {
            let t = P020.start();
            P020.leave(t);
        }
        for _ in 0..3 {
            let t = P021.start();
            P021.leave(t);
        }
        for _ in 0..3 {
            let t = P022.start();
            P022.leave(t);
        }
        for _ in 0..3 {
            let t = P023.start();
            P023.leave(t);
        }
        for _ in 0..3 {
            let t = P024.start();
            P024.leave(t);
        }
        for _ in 0..3 {
            let t = P025.start();
            P025.leave(t);
        }
        for _ in 0..3 {
            let t = P026.start();
            P026.leave(t);
        }
        for _ in 0..3 {
            let t = P027.start();
            P027.leave(t);
        }
        for _ in 0..3 {
            let t = P028.start();
            P028.leave(t);
        }
        for _ in 0..3 {
            let t = P029.start();
            P029.leave(t);
        }
        for _ in 0..3 {
            let t = P030.start();
            P030.leave(t);
        }
        for _ in 0..3 {
            let t = P031.start();
            P031.leave(t);
        }
        for _ in 0..3 {
            let t = P032.start();
            P032.leave(t);
        }
        for _ in 0..3 {
            let t = P033.start();
            P033.leave(t);
        }
        for _ in 0..3 {
            let t = P034.start();
            P034.leave(t);
        }
        for _ in 0..3 {
            let t = P035.start();
            P035.leave(t);
        }
        for _ in 0..3 {
            let t = P036.start();
            P036.leave(t);
        }
        for _ in 0..3 {
            let t = P037.start();
            P037.leave(t);
        }
        for _ in 0..3 {
            let t = P038.start();
            P038.leave(t);
        }
        for _ in 0..3 {
            let t = P039.start();
            P039.leave(t);
        }
        for _ in 0..3 {
            let t = P040.start();
            P040.leave(t);
        }
        for _ in 0..3 {
            let t = P041.start();
            P041.leave(t);
        }
        for _ in 0..3 {
            let t = P042.start();
            P042.leave(t);
        }
        for _ in 0..3 {
            let t = P043.start();
            P043.leave(t);
        }
        for _ in 0..3 {
            let t = P044.start();
            P044.leave(t);
        }
        for _ in 0..3 {
            let t = P045.start();
            P045.leave(t);
        }
        for _ in 0..3 {
            let t = P046.start();
            P046.leave(t);
        }
        for _ in 0..3 {
            let t = P047.start();
            P047.leave(t);
        }
        for _ in 0..3 {
            let t = P048.start();
            P048.leave(t);
        }
        for _ in 0..3 {
            let t = P049.start();
            P049.leave(t);
        }
        for _ in 0..3 {
            let t = P050.start();
            P050.leave(t);
        }
        for _ in 0..3 {
            let t = P051.start();
            P051.leave(t);
        }
        for _ in 0..3 {
            let t = P052.start();
            P052.leave(t);
        }
        for _ in 0..3 {
            let t = P053.start();
            P053.leave(t);
        }
        for _ in 0..3 {
            let t = P054.start();
            P054.leave(t);
        }
        for _ in 0..3 {
            let t = P055.start();
            P055.leave(t);
        }
        for _ in 0..3 {
            let t = P056.start();
            P056.leave(t);
        }
        for _ in 0..3 {
            let t = P057.start();
            P057.leave(t);
        }
        for _ in 0..3 {
            let t = P058.start();
            P058.leave(t);
        }
        for _ in 0..3 {
            let t = P059.start();
            P059.leave(t);
        }
        for _ in 0..3 {
            let t = P060.start();
            P060.leave(t);
        }
        for _ in 0..3 {
            let t = P061.start();
            P061.leave(t);
        }
        for _ in 0..3 {
            let t = P062.start();
            P062.leave(t);
        }
        for _ in 0..3 {
            let t = P063.start();
            P063.leave(t);
        }
        for _ in 0..3 {
            let t = P064.start();
            P064.leave(t);
        }
        for _ in 0..3 {
            let t = P065.start();
            P065.leave(t);
        }
        for _ in 0..3 {
            let t = P066.start();
            P066.leave(t);
        }
        for _ in 0..3 {
            let t = P067.start();
            P067.leave(t);
        }
        for _ in 0..3 {
            let t = P068.start();
            P068.leave(t);
        }
        for _ in 0..3 {
            let t = P069.start();
            P069.leave(t);
        }
        for _ in 0..3 {
            let t = P070.start();
            P070.leave(t);
        }
        for _ in 0..3 {
            let t = P071.start();
            P071.leave(t);
        }
        for _ in 0..3 {
            let t = P072.start();
            P072.leave(t);
        }
        for _ in 0..3 {
            let t = P073.start();
            P073.leave(t);
        }
        for _ in 0..3 {
            let t = P074.start();
            P074.leave(t);
        }
        for _ in 0..3 {
            let t = P075.start();
            P075.leave(t);
        }
        for _ in 0..3 {
            let t = P076.start();
            P076.leave(t);
        }
        for _ in 0..3 {
            let t = P077.start();
            P077.leave(t);
        }
        for _ in 0..3 {
            let t = P078.start();
            P078.leave(t);
        }
        for _ in 0..3 {
            let t = P079.start();
            P079.leave(t);
        }
        for _ in 0..3 {
            let t = P080.start();
            P080.leave(t);
        }
        for _ in 0..3 {
            let t = P081.start();
            P081.leave(t);
        }
        for _ in 0..3 {
            let t = P082.start();
            P082.leave(t);
        }
        for _ in 0..3 {
            let t = P083.start();
            P083.leave(t);
        }
        for _ in 0..3 {
            let t = P084.start();
            P084.leave(t);
        }
        for _ in 0..3 {
            let t = P085.start();
            P085.leave(t);
        }
        for _ in 0..3 {
            let t = P086.start();
            P086.leave(t);
        }
        for _ in 0..3 {
            let t = P087.start();
            P087.leave(t);
        }
        for _ in 0..3 {
            let t = P088.start();
            P088.leave(t);
        }
        for _ in 0..3 {
            let t = P089.start();
            P089.leave(t);
        }
        for _ in 0..3 {
            let t = P090.start();
            P090.leave(t);
        }
        for _ in 0..3 {
            let t = P091.start();
            P091.leave(t);
        }
        for _ in 0..3 {
            let t = P092.start();
            P092.leave(t);
        }
        for _ in 0..3 {
            let t = P093.start();
            P093.leave(t);
        }
        for _ in 0..3 {
            let t = P094.start();
            P094.leave(t);
        }
        for _ in 0..3 {
            let t = P095.start();
            P095.leave(t);
        }
        for _ in 0..3 {
            let t = P096.start();
            P096.leave(t);
        }
        for _ in 0..3 {
            let t = P097.start();
            P097.leave(t);
        }
        for _ in 0..3 {
            let t = P098.start();
            P098.leave(t);
        }
        for _ in 0..3 {
            let t = P099.start();
            P099.leave(t);
        }
        for _ in 0..3 {
            let t = P100.start();
            P100.leave(t);
        }
        for _ in 0..3 {
            let t = P101.start();
            P101.leave(t);
        }
        for _ in 0..3 {
            let t = P102.start();
            P102.leave(t);
        }
        for _ in 0..3 {
            let t = P103.start();
            P103.leave(t);
        }
        for _ in 0..3 {
            let t = P104.start();
            P104.leave(t);
        }
        for _ in 0..3 {
            let t = P105.start();
            P105.leave(t);
        }
        for _ in 0..3 {
            let t = P106.start();
            P106.leave(t);
        }
        for _ in 0..3 {
            let t = P107.start();
            P107.leave(t);
        }
        for _ in 0..3 {
            let t = P108.start();
            P108.leave(t);
        }
        for _ in 0..3 {
            let t = P109.start();
            P109.leave(t);
        }
        for _ in 0..3 {
            let t = P110.start();
            P110.leave(t);
        }
        for _ in 0..3 {
            let t = P111.start();
            P111.leave(t);
        }
        for _ in 0..3 {
            let t = P112.start();
            P112.leave(t);
        }
        for _ in 0..3 {
            let t = P113.start();
            P113.leave(t);
        }
        for _ in 0..3 {
            let t = P114.start();
            P114.leave(t);
        }
        for _ in 0..3 {
            let t = P115.start();
            P115.leave(t);
        }
        for _ in 0..3 {
            let t = P116.start();
            P116.leave(t);
        }
        for _ in 0..3 {
            let t = P117.start();
            P117.leave(t);
        }
        for _ in 0..3 {
            let t = P118.start();
            P118.leave(t);
        }
        for _ in 0..3 {
            let t = P119.start();
            P119.leave(t);
        }
        for _ in 0..3 {
            let t = P120.start();
            P120.leave(t);
        }
        for _ in 0..3 {
            let t = P121.start();
            P121.leave(t);
        }
        for _ in 0..3 {
            let t = P122.start();
            P122.leave(t);
        }
        for _ in 0..3 {
            let t = P123.start();
            P123.leave(t);
        }
        for _ in 0..3 {
            let t = P124.start();
            P124.leave(t);
        }
        for _ in 0..3 {
            let t = P125.start();
            P125.leave(t);
        }
        for _ in 0..3 {
            let t = P126.start();
            P126.leave(t);
        }
        for _ in 0..3 {
            let t = P127.start();
            P127.leave(t);
        }
        for _ in 0..3 {
            let t = P128.start();
            P128.leave(t);
        }
        for _ in 0..3 {
            let t = P129.start();
            P129.leave(t);
        }
        for _ in 0..3 {
            let t = P130.start();
            P130.leave(t);
        }
        for _ in 0..3 {
            let t = P131.start();
            P131.leave(t);
        }
        for _ in 0..3 {
            let t = P132.start();
            P132.leave(t);
        }
        for _ in 0..3 {
            let t = P133.start();
            P133.leave(t);
        }
        for _ in 0..3 {
            let t = P134.start();
            P134.leave(t);
        }
        for _ in 0..3 {
            let t = P135.start();
            P135.leave(t);
        }
        for _ in 0..3 {
            let t = P136.start();
            P136.leave(t);
        }
        for _ in 0..3 {
            let t = P137.start();
            P137.leave(t);
        }
        for _ in 0..3 {
            let t = P138.start();
            P138.leave(t);
        }
        for _ in 0..3 {
            let t = P139.start();
            P139.leave(t);
        }
        for _ in 0..3 {
            let t = P140.start();
            P140.leave(t);
        }
        for _ in 0..3 {
            let t = P141.start();
            P141.leave(t);
        }
        for _ in 0..3 {
            let t = P142.start();
            P142.leave(t);
        }
        for _ in 0..3 {
            let t = P143.start();
            P143.leave(t);
        }
        for _ in 0..3 {
            let t = P144.start();
            P144.leave(t);
        }
        for _ in 0..3 {
            let t = P145.start();
            P145.leave(t);
        }
        for _ in 0..3 {
            let t = P146.start();
            P146.leave(t);
        }
        for _ in 0..3 {
            let t = P147.start();
            P147.leave(t);
        }
        for _ in 0..3 {
            let t = P148.start();
            P148.leave(t);
        }
        for _ in 0..3 {
            let t = P149.start();
            P149.leave(t);
        }
        for _ in 0..3 {
            let t = P150.start();
            P150.leave(t);
        }
        for _ in 0..3 {
            let t = P151.start();
            P151.leave(t);
        }
        for _ in 0..3 {
            let t = P152.start();
            P152.leave(t);
        }
        for _ in 0..3 {
            let t = P153.start();
            P153.leave(t);
        }
        for _ in 0..3 {
            let t = P154.start();
            P154.leave(t);
        }
        for _ in 0..3 {
            let t = P155.start();
            P155.leave(t);
        }
        for _ in 0..3 {
            let t = P156.start();
            P156.leave(t);
        }
        for _ in 0..3 {
            let t = P157.start();
            P157.leave(t);
        }
        for _ in 0..3 {
            let t = P158.start();
            P158.leave(t);
        }
        for _ in 0..3 {
            let t = P159.start();
            P159.leave(t);
        }
        for _ in 0..3 {
            let t = P160.start();
            P160.leave(t);
        }
        for _ in 0..3 {
            let t = P161.start();
            P161.leave(t);
        }
        for _ in 0..3 {
            let t = P162.start();
            P162.leave(t);
        }
        for _ in 0..3 {
            let t = P163.start();
            P163.leave(t);
        }
        for _ in 0..3 {
            let t = P164.start();
            P164.leave(t);
        }
        for _ in 0..3 {
            let t = P165.start();
            P165.leave(t);
        }
        for _ in 0..3 {
            let t = P166.start();
            P166.leave(t);
        }
        for _ in 0..3 {
            let t = P167.start();
            P167.leave(t);
        }
        for _ in 0..3 {
            let t = P168.start();
            P168.leave(t);
        }
        for _ in 0..3 {
            let t = P169.start();
            P169.leave(t);
        }
        for _ in 0..3 {
            let t = P170.start();
            P170.leave(t);
        }
        for _ in 0..3 {
            let t = P171.start();
            P171.leave(t);
        }
        for _ in 0..3 {
            let t = P172.start();
            P172.leave(t);
        }
        for _ in 0..3 {
            let t = P173.start();
            P173.leave(t);
        }
        for _ in 0..3 {
            let t = P174.start();
            P174.leave(t);
        }
        for _ in 0..3 {
            let t = P175.start();
            P175.leave(t);
        }
        for _ in 0..3 {
            let t = P176.start();
            P176.leave(t);
        }
        for _ in 0..3 {
            let t = P177.start();
            P177.leave(t);
        }
        for _ in 0..3 {
            let t = P178.start();
            P178.leave(t);
        }
        for _ in 0..3 {
            let t = P179.start();
            P179.leave(t);
        }
        for _ in 0..3 {
            let t = P180.start();
            P180.leave(t);
        }
        for _ in 0..3 {
            let t = P181.start();
            P181.leave(t);
        }
        for _ in 0..3 {
            let t = P182.start();
            P182.leave(t);
        }
        for _ in 0..3 {
            let t = P183.start();
            P183.leave(t);
        }
        for _ in 0..3 {
            let t = P184.start();
            P184.leave(t);
        }
        for _ in 0..3 {
            let t = P185.start();
            P185.leave(t);
        }
        for _ in 0..3 {
            let t = P186.start();
            P186.leave(t);
        }
        for _ in 0..3 {
            let t = P187.start();
            P187.leave(t);
        }
        for _ in 0..3 {
            let t = P188.start();
            P188.leave(t);
        }
        for _ in 0..3 {
            let t = P189.start();
            P189.leave(t);
        }
        for _ in 0..3 {
            let t = P190.start();
            P190.leave(t);
        }
        for _ in 0..3 {
            let t = P191.start();
            P191.leave(t);
        }
        for _ in 0..3 {
            let t = P192.start();
            P192.leave(t);
        }
        for _ in 0..3 {
            let t = P193.start();
            P193.leave(t);
        }
        for _ in 0..3 {
            let t = P194.start();
            P194.leave(t);
        }
        for _ in 0..3 {
            let t = P195.start();
            P195.leave(t);
        }
        for _ in 0..3 {
            let t = P196.start();
            P196.leave(t);
        }
        for _ in 0..3 {
            let t = P197.start();
            P197.leave(t);
        }
        for _ in 0..3 {
            let t = P198.start();
            P198.leave(t);
        }
        for _ in 0..3 {
            let t = P199.start();
            P199.leave(t);
        }
    }
}

#[test]
fn slot_memory_is_capped_and_every_call_is_accounted_for() {
    if std::env::var_os("PROFPOINT_SLOT_CAP_CHILD").is_some() {
        points::child();
        return;
    }
    let dir = std::env::temp_dir().join(format!("profpoint-slot-cap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let o = common::runner::target_command(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "slot_memory_is_capped_and_every_call_is_accounted_for",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("PROFPOINT_SLOT_CAP_CHILD", "1")
        .env("PROFPOINT_MAX_SLOT_MB", "1")
        .env(
            "PROFPOINT_REPORT",
            format!("json:{},stderr", json.display()),
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // One line when the cap is hit, naming the value and the variable.
    assert_eq!(
        err.matches(
            "profpoint: per-thread point slots reached the 1 MiB cap (PROFPOINT_MAX_SLOT_MB"
        )
        .count(),
        1,
        "{err}"
    );
    // The table's header says how many calls are in no row.
    assert!(
        err.contains("slot memory reached its cap of 1 MiB"),
        "{err}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let slots = &v["slots"];
    assert_eq!(slots["cap_bytes"], 1u64 << 20, "{slots}");
    assert_eq!(slots["cap_reached"], true, "{slots}");
    assert!(slots["bytes"].as_u64().unwrap() <= 1 << 20, "{slots}");
    let unrecorded = slots["unrecorded_calls"].as_u64().unwrap();
    let ours: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let n = p["name"].as_str().unwrap();
            n.len() == 4 && n.starts_with('P')
        })
        .map(|p| p["nr"].as_u64().unwrap())
        .collect();
    assert_eq!(ours.len(), 200, "{v}");
    // A point is recorded whole (its slot came before the cap) or not at all.
    assert!(ours.iter().all(|&n| n == 0 || n == 3), "{ours:?} {slots}");
    let recorded: u64 = ours.iter().sum();
    let with_slot = ours.iter().filter(|&&n| n == 3).count();
    assert!(with_slot <= (1 << 20) / 11_392, "{with_slot} slots {slots}");
    assert!(
        with_slot > 0 && unrecorded > 0,
        "{with_slot} {unrecorded} {err}"
    );
    assert_eq!(
        recorded + unrecorded,
        600,
        "recorded {recorded} + unrecorded {unrecorded}: {ours:?} {slots}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
