import io, json, sys
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import SerializationContext, MessageField
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
import avro.schema, avro.io

reg_url, avro_schema = sys.argv[1], sys.argv[2]
client = SchemaRegistryClient({"url": reg_url})
out = {}

js = json.dumps({"title": "acme.Signup", "type": "object",
                 "properties": {"email": {"type": "string"}, "n": {"type": "integer"}}, "required": ["email"]})
ser = JSONSerializer(js, client, conf={"auto.register.schemas": True})
out["json"] = ser({"email": "ada@example.com", "n": 7}, SerializationContext("signups", MessageField.VALUE)).hex()

fdp = descriptor_pb2.FileDescriptorProto(name="acme/shop.proto", package="acme.shop", syntax="proto3")
first = fdp.message_type.add(name="Cart")
first.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
second = fdp.message_type.add(name="Line")
second.field.add(name="sku", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
second.field.add(name="qty", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32, label=1)
nested = second.nested_type.add(name="Price")
nested.field.add(name="cents", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64, label=1)
second.field.add(name="price", number=3, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, label=1, type_name=".acme.shop.Line.Price")
pool = descriptor_pool.DescriptorPool()
pool.Add(fdp)
Line = message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("acme.shop.Line"))
msg = Line(sku="SKU-42", qty=3)
msg.price.cents = 1299
pser = ProtobufSerializer(Line, client, {"auto.register.schemas": True})
out["protobuf"] = pser(msg, SerializationContext("carts", MessageField.VALUE)).hex()

schema = avro.schema.parse(avro_schema)
buf = io.BytesIO()
avro.io.DatumWriter(schema).write({"id": "INV-7", "status": "PAID", "amount": 12.5, "note": None}, avro.io.BinaryEncoder(buf))
out["avro"] = buf.getvalue().hex()
print(json.dumps(out))
